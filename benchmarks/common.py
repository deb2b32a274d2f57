"""Shared by the benchmark scripts: one table format and one place for the JSON they write."""

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

RESULTS_DIR = Path(__file__).resolve().parent / "results"


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


def write_results(name: str, measures: Sequence[Measure]) -> Path:
    """Write the measures, with what they ran on, to `benchmarks/results/<name>.json`."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "measures": {m.key: asdict(m) for m in measures},
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def _format(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"
