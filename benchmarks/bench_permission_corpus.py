"""The adversarial permission corpus: bypasses per attack class and mode, and the controls.

Runs every case of `tests/permission_cases/attacks.json` in all six modes through the real
tools and pipeline (the harness in `tests/permission_attack_harness.py`), and the everyday
calls of `controls.json` against their recorded baseline. Prints a class × mode table of
bypass counts and writes `benchmarks/results/permission_corpus.json` with every bypass (case,
mode, what leaked or changed). Run: ``.venv/bin/python -m benchmarks permission_corpus``
(with ``JUPYTER_TOOLHOST_BASH_SANDBOX=1`` to measure Bash under the sandbox).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .common import results_dir, run_id

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

# The harness lives beside the tests.
from permission_attack_harness import (
    CASES_DIR,
    MODES,
    bypass,
    load_cases,
    run_many,
)
from permission_control_baseline import control_record, control_regressions


def main() -> None:
    attacks = load_cases("attacks.json")
    controls = load_cases("controls.json")
    by_id = {case.id: case for case in (*attacks, *controls)}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = dict(run_many([*attacks, *controls], Path(tmp)))
    elapsed = time.perf_counter() - started

    bypasses: list[dict[str, Any]] = []
    harness_errors: dict[str, str] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for case in attacks:
        result = runs[case.id]
        if isinstance(result, str):
            harness_errors[case.id] = result
            continue
        for run in result:
            why = bypass(case, run)
            if why is not None:
                counts[case.cls, run.mode] += 1
                bypasses.append(
                    {"id": case.id, "class": case.cls, "mode": run.mode, "note": case.note,
                     "what": why}
                )  # fmt: skip

    recorded = json.loads((CASES_DIR / "controls.json").read_text(encoding="utf-8"))
    baseline = recorded["baseline"]
    documented = {c["id"]: c["changed"] for c in recorded["cases"] if "changed" in c}
    kept, lost, changed = 0, {}, {}
    for case in controls:
        result = runs[case.id]
        if isinstance(result, str):
            lost[case.id] = ["harness error"]
            continue
        regressions = control_regressions(baseline.get(case.id, {}), control_record(case, result))
        regressions += [f"{run.mode}: {leak}" for run in result for leak in run.leaks]
        allowed = set(documented.get(case.id, {}).get("regressions", ()))
        if regressions and set(regressions) <= allowed:
            changed[case.id] = documented[case.id]["why"]
        elif regressions or case.id not in baseline:
            lost[case.id] = regressions or ["no baseline"]
        else:
            kept += 1

    classes = sorted({case.cls for case in attacks})
    sizes = Counter(case.cls for case in attacks)
    print(
        f"\npermission corpus: {len(attacks)} attacks x {len(MODES)} modes, "
        f"{len(controls)} controls, {elapsed:.1f} s"
    )
    header = ["class (cases)", *MODES, "total"]
    rows = [
        [f"{cls} ({sizes[cls]})", *(str(counts[cls, m]) for m in MODES),
         str(sum(counts[cls, m] for m in MODES))]
        for cls in classes
    ]  # fmt: skip
    rows.append(
        ["all", *(str(sum(counts[c, m] for c in classes)) for m in MODES), str(len(bypasses))]
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in
                        enumerate(zip(row, widths, strict=True))))  # fmt: skip
    total = len(attacks) * len(MODES)
    bypassed_cases = len({b["id"] for b in bypasses})
    print(
        f"\nattack runs {total}, bypasses {len(bypasses)} ({bypassed_cases} cases), "
        f"harness errors {len(harness_errors)}; controls kept {kept} / {len(controls)}, "
        f"changed as documented {len(changed)}, lost {len(lost)}"
    )
    for cid, why in sorted(lost.items()):
        print(f"  control {cid} not kept: {'; '.join(why)}")
    for cid, reason in sorted(changed.items()):
        print(f"  control {cid} changed on purpose: {reason}")

    path = results_dir() / "permission_corpus.json"
    payload = {
        "benchmark": "permission_corpus",
        "run_id": run_id(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sandbox": os.environ.get("JUPYTER_TOOLHOST_BASH_SANDBOX", ""),
        "seconds": round(elapsed, 1),
        "attacks": len(attacks),
        "modes": list(MODES),
        "attack_runs": total,
        "bypasses": len(bypasses),
        "bypassed_cases": bypassed_cases,
        "by_class_and_mode": {cls: {m: counts[cls, m] for m in MODES} for cls in classes},
        "controls_kept": kept,
        "controls_total": len(controls),
        "controls_not_kept": lost,
        "controls_changed_as_documented": changed,
        "harness_errors": harness_errors,
        "bypass_list": bypasses,
        "cases": {cid: by_id[cid].note for cid in sorted(by_id)},
    }
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
