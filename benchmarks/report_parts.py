"""What every section of the benchmark report reads: one run's record, and Markdown tables.

Kept apart from `report` (which loads a run and puts the sections together) so that the
sections in `report_rows`, `report_everyday` and `targets` don't import it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Run:
    """One run's record (`run.json`) and its benchmarks' payloads, by benchmark name."""

    folder: Path
    record: dict[str, Any]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def value(self, benchmark: str, key: str) -> float | None:
        """A measure's value, or None when the run has no such figure."""
        measure = self.results.get(benchmark, {}).get("measures", {}).get(key)
        return None if measure is None else float(measure["value"])

    def payload(self, benchmark: str) -> dict[str, Any]:
        return self.results.get(benchmark, {})


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (pipes inside cells escaped)."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(head), line(["---"] * len(head)), *(line(r) for r in rows)]
