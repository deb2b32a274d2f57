"""What an option's value may be: each reader checks one text and converts it.

A reader raises `UsageError` with what is wrong and what is expected; both front ends show
that text as it is (the `%%agent` line in the cell, the command line after ``error:``).
"""

from __future__ import annotations

import shlex

from ..core.errors import UsageError as UsageError
from ..core.types import (
    CASSETTE_MODES,
    DISCLOSURE_OPTIONS,
    PERMISSION_MODES,
    CassetteMode,
    PermissionMode,
)

DISCLOSURES = DISCLOSURE_OPTIONS
THINK_MIN = 1024
"""The smallest thinking budget the Messages API takes (`budget_tokens` ≥ 1024)."""
THINK_OFF = 0
"""`--think off`: the budget that means "no extended thinking"."""


def split_words(line: str) -> list[str]:
    """`line` split as a shell would; unbalanced quotes are a `UsageError`."""
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"Could not read the options ({exc}).") from None


def parse_mode(value: str) -> PermissionMode:
    """A permission mode name, checked (a cassette mode gets a pointer to --cassette-mode)."""
    for mode in PERMISSION_MODES:
        if mode == value:
            return mode
    hint = f" ({value!r} is a cassette mode: use --cassette-mode {value}.)"
    raise UsageError(
        f"Unknown mode {value!r}; the permission modes are: {', '.join(PERMISSION_MODES)}."
        + (hint if value in CASSETTE_MODES else "")
    )


def parse_cassette_mode(value: str) -> CassetteMode:
    """A cassette mode name, checked (a permission mode gets a pointer to --mode)."""
    for mode in CASSETTE_MODES:
        if mode == value:
            return mode
    hint = f" ({value!r} is a permission mode: use --mode {value}.)"
    raise UsageError(
        f"Unknown cassette mode {value!r}; choose one of: {', '.join(CASSETTE_MODES)}."
        + (hint if value in PERMISSION_MODES and value != "auto" else "")
    )


def parse_disclosure(value: str) -> str:
    """A disclosure style name, checked."""
    if value in DISCLOSURES:
        return value
    raise UsageError(f"Unknown disclosure {value!r}; choose one of: {', '.join(DISCLOSURES)}.")


def parse_think(value: object, *, name: str = "--think") -> int:
    """A thinking budget: a whole number of tokens ≥ `THINK_MIN`, or "off" (→ `THINK_OFF`).

    Takes the text of `--think` and the value of `c.ToolHost.think` (an int there) alike;
    `name` is the option named in the error."""
    if value is False:
        return THINK_OFF
    text = str(value).strip()
    if text.lower() == "off":
        return THINK_OFF
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        example = f"{name} 4096" if name.startswith("-") else f"{name} = 4096"
        raise UsageError(
            f"{name} takes a number of tokens (at least {THINK_MIN}, e.g. {example}) "
            f"or off, not {text!r}."
        )
    budget = int(text)
    if budget < THINK_MIN:
        raise UsageError(
            f"{name} {budget} is below the API's minimum thinking budget of {THINK_MIN} "
            f"tokens: give at least {THINK_MIN}, or off."
        )
    return budget


def parse_max_turns(value: str) -> int:
    """A limit on model requests: a whole number, at least 1."""
    try:
        turns = int(value)
    except ValueError:
        raise UsageError("--max-turns needs a whole number, e.g. --max-turns 5.") from None
    if turns < 1:
        raise UsageError("--max-turns must be at least 1.")
    return turns


def parse_tools(value: str) -> tuple[str, ...]:
    """Comma-separated tool names (at least one)."""
    tools = tuple(name.strip() for name in value.split(",") if name.strip())
    if not tools:
        raise UsageError("--tools needs at least one tool name, e.g. --tools Read,Grep.")
    return tools


def thinking_param(budget: int | None) -> dict[str, object] | None:
    """The API's `thinking` object for a budget (None when thinking is off).

    ``display: "summarized"`` asks for the thinking text even from models whose default is
    ``"omitted"`` (signature only), so the cell has something to show."""
    if not budget:
        return None
    return {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
