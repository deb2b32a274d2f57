"""The options a session runs with, as a `%%agent` line and the command line spell them.

`RUN_OPTIONS` lists each option once: its name, how its value is read and checked, and its
help. The `%%agent` line (`options.parse_cell_line`) and ``python -m jupyter_toolhost``
(`__main__.parser`) are both built from it, so the two read the same option strings to the
same values and refuse the same mistakes in the same words. This module imports nothing
heavy: the command line's ``--help`` loads no session, model or tool.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class RunOption:
    """One option that takes a value: how it is spelled, read and described."""

    name: str
    """``--mode``; the value is what follows it (``--mode plan``, ``--mode=plan``)."""
    field: str
    """Where the value goes (`CellOptions.mode`)."""
    read: Callable[[str], object]
    """Checks and converts the value; raises `UsageError` with what is wrong."""
    metavar: str
    help: str


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("--model", "model", str, "M", "model id"),
    RunOption("--max-turns", "max_turns", parse_max_turns, "N", "model requests at most"),
    RunOption("--tools", "tools", parse_tools, "A,B", "only these tools"),
    RunOption(
        "--mode",
        "mode",
        parse_mode,
        "MODE",
        f"permission mode: {' | '.join(PERMISSION_MODES)}",
    ),
    RunOption("--cassette", "cassette", str, "PATH", "record to / replay from this cassette"),
    RunOption(
        "--cassette-mode",
        "cassette_mode",
        parse_cassette_mode,
        "{" + ",".join(CASSETTE_MODES) + "}",
        "with --cassette: auto (replay if the file exists, else record), record, or replay",
    ),
    RunOption(
        "--disclosure",
        "disclosure",
        parse_disclosure,
        "STYLE",
        f"how deferred (MCP) tools reach the model: {', '.join(DISCLOSURES)}",
    ),
    RunOption(
        "--think",
        "think",
        parse_think,
        "N|off",
        f"extended thinking with a budget of N tokens (at least {THINK_MIN}), or off",
    ),
)
RUN_OPTION_NAMES = tuple(option.name for option in RUN_OPTIONS)


def read_options(
    words: Sequence[str], *, names: Sequence[str], flags: Sequence[str] = (), usage: str
) -> tuple[dict[str, object], set[str]]:
    """Read ``--name value`` / ``--name=value`` options (those in `names`) and bare `flags`
    from `words`: each value read and checked by its `RunOption` (the last one given, in
    `RUN_OPTIONS` order); returns the values by field and the flags given. A value is the
    next word whatever it looks like, so ``--think --new`` reports ``'--new'`` as a bad
    budget rather than dropping it."""
    texts: dict[str, str] = {}
    given: set[str] = set()
    index = 0
    while index < len(words):
        word = words[index]
        name, eq, inline = word.partition("=")
        if word in flags:
            given.add(word)
        elif name in names:
            if eq:
                text = inline
            elif index + 1 < len(words):
                index += 1
                text = words[index]
            else:
                raise UsageError(f"{name} needs a value.\nUsage: {usage}")
            texts[name] = text
        else:
            raise UsageError(f"Unknown option {word!r}.\nUsage: {usage}")
        index += 1
    values = {o.field: o.read(texts[o.name]) for o in RUN_OPTIONS if o.name in texts}
    return values, given
