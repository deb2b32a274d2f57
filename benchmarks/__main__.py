"""Run the benchmarks: `python -m benchmarks [--out DIR] [NAME ...]` (or `./dev bench`).

Each `benchmarks/bench_*.py` runs in its own interpreter (so one's imports and memory do not
colour another's figures), prints its table and writes `<name>.json`. Benchmarks measure;
they never fail a build on a figure.

One run, one folder. Every JSON a run writes carries the run's id, and the run writes
`run.json` (id, start, machine line, each benchmark's exit status and seconds), so
`python -m benchmarks report` can refuse a folder that mixes runs.

- With no NAME this is a full run: it deletes the earlier results in `benchmarks/results/`
  first (the JSON files that name a benchmark, and `run.json`; nothing else) and writes
  there. That folder is committed: the Results of docs/benchmarks.md are generated from
  it (`python -m benchmarks report --write-readme`) and a test checks that they agree.
- With NAMEs (or a single `python -m benchmarks.bench_NAME`) it writes to
  `benchmarks/results/scratch/` (not committed), so a partial run never mixes into the full
  one. `--out DIR` writes anywhere.
- `python -m benchmarks report [...]` prints the Markdown report of a run (see `report.py`).

Under `JUPYTER_TOOLHOST_BENCH_REQUIRE_PEERS=1` (`./dev bench` sets it) a peer that cannot be
imported stops the run before any benchmark starts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import secrets
import subprocess
import sys
import time
from pathlib import Path

from .common import REQUIRE_PEERS, RESULTS_DIR, RESULTS_ENV, RUN_DIR, RUN_ID_ENV

HERE = Path(__file__).resolve().parent
REQUIRED_PEERS = {"pydantic_ai": "pydantic-ai (the bench extra)"}
"""Python packages a run under `REQUIRE_PEERS` cannot do without (import name: what it is)."""


def machine_line() -> str:
    """The one line that says what a run ran on."""
    return (
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, {_cpus()} CPUs"
    )


def all_names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


def missing_peers() -> list[str]:
    """The required peers that cannot be imported in this interpreter."""
    missing = []
    for name, what in REQUIRED_PEERS.items():
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(what)
    return missing


def main(argv: list[str]) -> int:
    if argv[:1] == ["report"]:
        from .report import main as report

        return report(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--out", type=Path, help="the folder to write the run's JSON files to")
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    args = parser.parse_args(argv)
    known = all_names()
    modules = [n if n.startswith("bench_") else f"bench_{n}" for n in args.names] or known
    unknown = [m for m in modules if m not in known]
    if unknown:
        parser.error(f"no such benchmark: {', '.join(unknown)} (there are: {', '.join(known)})")
    if os.environ.get(REQUIRE_PEERS) == "1" and (missing := missing_peers()):
        stamp = Path(sys.prefix) / ".toolhost-installed-test-bench"
        print(
            f"cannot run the benchmarks: {', '.join(missing)} is not installed. Install the "
            f'bench extra: pip install -e ".[bench]", or delete {stamp} and ./dev bench '
            "installs it again",
            file=sys.stderr,
        )
        return 2
    full = not args.names
    out: Path = args.out or (RUN_DIR if full else RESULTS_DIR)
    out.mkdir(parents=True, exist_ok=True)
    if full:
        clear_results(out)  # a full run's folder holds that run alone
    run_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"
    record: dict[str, object] = {
        "run_id": run_id,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine_line(),
        "full": full,
        "planned": modules,
    }
    ran: dict[str, dict[str, float]] = {}
    print(f"# {record['machine']}\n# run {run_id}, writing to {out}")
    env = {**os.environ, RUN_ID_ENV: run_id, RESULTS_ENV: str(out)}
    failures = []
    total = time.perf_counter()
    for module in modules:
        print(f"\n## {module}", flush=True)
        started = time.perf_counter()
        status = subprocess.call(
            [sys.executable, "-m", f"benchmarks.{module}"], cwd=HERE.parent, env=env
        )
        seconds = time.perf_counter() - started
        print(f"({module} took {seconds:.1f} s)", flush=True)
        ran[module] = {"status": status, "seconds": round(seconds, 1)}
        if status != 0:
            failures.append(module)
        seconds_so_far = round(time.perf_counter() - total, 1)
        _write_record(out, record | {"benchmarks": ran, "seconds": seconds_so_far})
    print(
        f"\nthe run took {time.perf_counter() - total:.0f} s; its report: "
        f"python -m benchmarks report{'' if out == RUN_DIR else f' --results {out}'}"
    )
    if failures:
        print(f"benchmarks that did not run to the end: {', '.join(failures)}")
        return 1
    return 0


def clear_results(folder: Path) -> list[Path]:
    """Delete the benchmark results and `run.json` in `folder` (JSON objects that name a
    benchmark); any other file stays. Returns what was deleted."""
    gone = []
    for path in folder.glob("*.json"):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(payload, dict) and ("benchmark" in payload or path.name == "run.json"):
            path.unlink()
            gone.append(path)
    return gone


def _write_record(out: Path, record: dict[str, object]) -> None:
    (out / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
