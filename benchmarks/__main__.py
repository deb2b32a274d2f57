"""Run every benchmark in one go: `python -m benchmarks [NAME ...]` (or `./dev bench`).

Each `benchmarks/bench_*.py` runs in its own interpreter (so one's imports and memory do not
colour another's figures), prints its table and writes `benchmarks/results/<name>.json`.
Benchmarks measure; they never fail a build on a figure.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem for p in HERE.glob("bench_*.py"))
    print(
        f"# machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, {_cpus()} CPUs"
    )
    failures = []
    for name in names:
        module = name if name.startswith("bench_") else f"bench_{name}"
        print(f"\n## {module}", flush=True)
        started = time.perf_counter()
        status = subprocess.call([sys.executable, "-m", f"benchmarks.{module}"], cwd=HERE.parent)
        print(f"({module} took {time.perf_counter() - started:.1f} s)", flush=True)
        if status != 0:
            failures.append(module)
    if failures:
        print(f"\nbenchmarks that did not run to the end: {', '.join(failures)}")
        return 1
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
