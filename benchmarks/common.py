"""Shared by the benchmark scripts: one table format and one place for the JSON they write.

Where a benchmark writes: the folder `python -m benchmarks` names in `RESULTS_ENV` (with the
run's id in `RUN_ID_ENV`, written into every JSON); run on its own, `RESULTS_DIR`
(`benchmarks/results/scratch/`, not committed) under a run id of its own. `RUN_DIR`
(`benchmarks/results/`) holds the last full run, which is committed.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

RUN_DIR = Path(__file__).resolve().parent / "results"
"""The last full run (`./dev bench`): committed; docs/benchmarks.md's Results come from it."""
RESULTS_DIR = RUN_DIR / "scratch"
"""Where a benchmark run on its own (or a partial run) writes."""
RESULTS_ENV = "JUPYTER_TOOLHOST_BENCH_RESULTS"
RUN_ID_ENV = "JUPYTER_TOOLHOST_BENCH_RUN_ID"
REQUIRE_PEERS = "JUPYTER_TOOLHOST_BENCH_REQUIRE_PEERS"
"""Set to 1 (./dev bench does) and a peer that cannot be imported fails the run."""
_STANDALONE_ID = f"standalone-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class Measure:
    """One figure a benchmark reports."""

    key: str
    label: str
    value: float
    unit: str
    note: str = ""


def median(samples: Sequence[float]) -> float:
    """The median of `samples` (which must not be empty)."""
    return statistics.median(samples)


def print_table(title: str, measures: Sequence[Measure]) -> None:
    """Print the measures as an aligned plain-text table."""
    rows = [(m.label, _format(m.value), m.unit, m.note) for m in measures]
    header = ("measure", "value", "unit", "note")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    print(f"\n{title}")
    print("  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), *row[2:]]
        print("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)))


def results_dir() -> Path:
    """The folder this process writes its results to (created)."""
    folder = Path(os.environ.get(RESULTS_ENV) or RESULTS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_id() -> str:
    """The id of the run this process belongs to (its own when run on its own)."""
    return os.environ.get(RUN_ID_ENV) or _STANDALONE_ID


def write_results(
    name: str, measures: Sequence[Measure], extra: dict[str, object] | None = None
) -> Path:
    """Write the measures (and `extra`), with what they ran on, to `<results>/<name>.json`."""
    path = results_dir() / f"{name}.json"
    payload = {
        "benchmark": name,
        "run_id": run_id(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "measures": {m.key: asdict(m) for m in measures},
        **(extra or {}),
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def _format(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"
