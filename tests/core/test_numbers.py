"""One way to write a number for a person: `format_number`, checked against the table the lab
extension's `formatNumber` is checked against too (labextension/test/number-cases.json), so
the kernel's views and the lab's write the same strings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_toolhost.core.numbers import format_number

CASES = Path(__file__).parents[2] / "labextension" / "test" / "number-cases.json"


def cases() -> list[dict[str, object]]:
    return json.loads(CASES.read_text())["cases"]


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"{c['unit']}-{c['value']}")
def test_each_number_is_written_as_the_shared_table_says(case: dict[str, object]) -> None:
    value, unit = case["value"], case["unit"]
    assert isinstance(value, int | float)
    assert format_number(value, unit) == case["text"]  # type: ignore[arg-type]


def test_the_table_covers_every_unit() -> None:
    from typing import get_args

    from jupyter_toolhost.core.numbers import Unit

    assert {c["unit"] for c in cases()} == set(get_args(Unit))


def test_halves_round_up_as_in_the_browser() -> None:
    # Python's own formatting rounds halves to even ("1.2" for 1.25); the browser's toFixed
    # rounds them up: both views write 1.3.
    assert format_number(1.25, "seconds") == "1.3 s"
    assert format_number(0.125, "percent") == "13%"
    assert format_number(2.5) == "3"
