"""How every number shown to a person is written: one function, `format_number`.

A cell's footer, its HTML, the lab extension, `%agent cost`, `%agent status`, the cards and
the timeline all write counts, tokens, dollars, sizes and times through it, so the same run
reads the same in every view ("27,498 in / 221 out tokens", never "27498" beside "27,498").
The lab extension's `formatNumber` (labextension/src/format.ts) follows the same rules; both
are checked against one table of cases (labextension/test/number-cases.json).

The rules, by unit:

- ``count``, ``tokens``: whole numbers with thousands separators: ``27,498``;
- ``usd``: dollars to four decimal places (a cell often costs less than a cent):
  ``$0.0123``, ``$1,234.5000``;
- ``bytes``: ``512 B``, ``1,023 B``, ``106.3 KB``, ``4.2 MB``, ``1.5 GB`` (KB = 1,024 bytes),
  as the ``<persisted-output>`` block the model reads writes them;
- ``seconds`` (a duration): ``85 ms`` under a second, ``1.2 s`` under a minute, then
  ``1 min 05 s``;
- ``clock`` (a running clock, whole seconds): ``3 s``, ``1 min 05 s``;
- ``percent`` (a fraction from 0 to 1): ``42%``.

Not for numbers the model reads (those keep Claude Code's own forms) or for ids and paths,
nor for the ticks of a time axis or the ends of a range ("0.00–0.41 s of 0.41 s"), which
keep one precision together so they line up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeAlias, assert_never

Unit: TypeAlias = Literal["count", "tokens", "usd", "bytes", "seconds", "clock", "percent"]
KB = 1_024
"""Bytes in the KB people read."""


def format_number(value: float, unit: Unit = "count") -> str:
    """`value` written for a person, by the rules of this module's docstring."""
    match unit:
        case "count" | "tokens":
            return _fixed(value, 0)
        case "usd":
            return "$" + _fixed(value, 4)
        case "bytes":
            return _bytes(value)
        case "seconds":
            return _seconds(value)
        case "clock":
            whole = max(0, math.floor(value))
            return f"{whole} s" if whole < 60 else _minutes(whole)
        case "percent":
            return _fixed(value * 100, 0) + "%"
        case _:
            assert_never(unit)


def _fixed(value: float, places: int) -> str:
    """`value` to `places` decimals, halves rounded up (as the lab extension rounds, so both
    write the same digits), with thousands separators."""
    scaled = math.floor(abs(value) * 10**places + 0.5)
    whole, fraction = divmod(scaled, 10**places)
    sign = "-" if value < 0 and scaled else ""
    digits = f"{whole:,}" + (f".{fraction:0{places}d}" if places else "")
    return sign + digits


def _bytes(size: float) -> str:
    if size < KB:
        return _fixed(size, 0) + " B"
    for power, unit in ((1, "KB"), (2, "MB")):
        scaled = size / KB**power
        if float(_fixed(scaled, 1).replace(",", "")) < KB:
            return _fixed(scaled, 1) + " " + unit
    return _fixed(size / KB**3, 1) + " GB"


def _seconds(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if math.floor(seconds * 1000 + 0.5) < 1000:
        return _fixed(seconds * 1000, 0) + " ms"
    if math.floor(seconds * 10 + 0.5) < 600:
        return _fixed(seconds, 1) + " s"
    return _minutes(math.floor(seconds + 0.5))


def _minutes(whole: int) -> str:
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest:02d} s"


def tokens_added(tokens: int, *, measured: bool, images: Sequence[tuple[int, int]] = ()) -> str:
    """What a tool result adds to the conversation, as a card shows it: "1,234 tokens"
    (measured), "≈1,234 tokens" (estimated), and each image's size as sent
    ("· image 1092×1092 px")."""
    text = ("" if measured else "≈") + format_number(tokens, "tokens") + " tokens"
    for width, height in images:
        text += f" · image {width}×{height} px"
    return text
