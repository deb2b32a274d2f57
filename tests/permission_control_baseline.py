"""The controls of the permission corpus: everyday calls and their recorded baseline.

A control is kept when the current code decides each of its steps at least as permissively
as the baseline did, in every mode, and prints the same where both ran. Record the baseline
from a checkout of the code to compare against (its package first on the import path):
``PYTHONPATH=<checkout> python tests/permission_control_baseline.py record-baseline``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from permission_attack_harness import CASES_DIR, Case, ModeRun, load_cases, run_many


def control_record(case: Case, runs: Sequence[ModeRun]) -> dict[str, Any]:
    """Per mode: each step's outcome and, when it ran, its output text."""
    return {
        run.mode: [
            {"outcome": s.outcome, "text": s.text if s.outcome != "deny" else None}
            for s in run.steps
        ]
        for run in runs
    }


_RANK = {"deny": 0, "ask": 1, "allow": 2}


def control_regressions(baseline: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Where `now` is less permissive than `baseline`, or ran with another output.

    Outputs are compared step by step while both runs ran the same earlier steps: once an
    earlier step ran in one and not in the other (say a `cd` that used to be refused), what
    follows is not comparable.
    """
    found = []
    for mode, steps in baseline.items():
        comparable = True
        for number, (old, new) in enumerate(zip(steps, now.get(mode, []), strict=False), 1):
            if _RANK[new["outcome"]] < _RANK[old["outcome"]]:
                found.append(f"{mode} step {number}: {old['outcome']} -> {new['outcome']}")
            elif comparable and _ran(old) and _ran(new) and old["text"] != new["text"]:
                found.append(f"{mode} step {number}: output changed")
            comparable = comparable and _ran(old) == _ran(new)
    return found


def _ran(step: Mapping[str, Any]) -> bool:
    """Whether the step's tool ran (allowed, or asked and approved)."""
    text = step["text"]
    return (
        step["outcome"] != "deny"
        and text is not None
        and "The user denied this" not in text
        and "requires approval" not in text
    )


def record_baseline(base: Path) -> dict[str, Any]:
    """Run the controls against the code on the import path; their records by case id."""
    cases = load_cases("controls.json")
    by_id = {case.id: case for case in cases}
    records = {}
    for cid, runs in run_many(cases, base):
        if isinstance(runs, str):
            raise RuntimeError(f"control {cid} could not run:\n{runs}")
        records[cid] = control_record(by_id[cid], runs)
    return records


def _main(argv: Sequence[str]) -> int:
    """`record-baseline`: write the current code's control decisions into controls.json."""
    import tempfile

    import jupyter_toolhost

    if list(argv) != ["record-baseline"]:
        print("usage: python tests/permission_control_baseline.py record-baseline")
        return 2
    where = Path(jupyter_toolhost.__file__).resolve().parent
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        records = record_baseline(Path(tmp))
    path = CASES_DIR / "controls.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["baseline_commit"] = commit
    data["baseline"] = {case["id"]: records[case["id"]] for case in data["cases"]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded {len(records)} controls at {commit[:12]} into {path}")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(_main(sys.argv[1:]))
