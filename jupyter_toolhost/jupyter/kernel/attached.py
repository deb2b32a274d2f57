"""Kernel variables as context: ``%%agent --with df,model`` or ``@df`` in the prompt.

The person names variables they already have; the cell sends a compact, read-only
description of each with the prompt, so the model needs no ListVariables or InspectVariable
call to learn what was named. The description is InspectVariable's (`kernel_tools.describe`):
type, shape, dtypes, the first rows and a summary for a DataFrame; shape, dtype and range for
an array; a safe repr otherwise. It is reached under InspectVariable's rules
(`variable_reach.lookup`), so the kernel's own objects (``os.environ``, modules, the tool
host) are refused by name, and it passes the session's redactor like any tool result.

**Names.** ``--with`` takes names or paths separated by commas (``df,model.coef_``). In the
prompt, ``@name`` (or ``@name.attr``) counts when it starts a word and sits outside a code
span: ``user@example.org``, `` `@dataclass` `` and ``\\@name`` (the backslash is dropped) stay
text. Names are resolved when the cell runs, in the kernel's namespace at that moment. A
name that is not there stops the cell before anything is sent, with the nearest names and
how to keep the text as it is.

**Budget.** Each description is cut to `PER_VARIABLE` characters and all of them together
to `TOTAL` (``JUPYTER_TOOLHOST_ATTACH_CHARS`` sets the total; each variable then gets a third
of it): a cut description says how much of it was shown, and a variable left out for want of
room says so. The block is its own text block in the user message, before the prompt, and
the request view shows it as its own block.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import UsageError
from ...core.types import ToolError
from .kernel_tools import describe
from .variable_reach import USE_PYTHON_EXEC, KernelState, lookup, user_variables

PER_VARIABLE = 4_000
TOTAL = 12_000
TOTAL_ENV = "JUPYTER_TOOLHOST_ATTACH_CHARS"
OPEN = "<kernel-variables>"
CLOSE = "</kernel-variables>"

_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
_MENTION = re.compile(r"(?<![\w@\\])@([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_ESCAPED = re.compile(r"\\@(?=[A-Za-z_])")


@dataclass(frozen=True, slots=True)
class Attached:
    """What a cell attaches: the block to send, and what was cut."""

    names: tuple[str, ...]
    text: str
    cut: tuple[str, ...] = field(default=())
    """One line per cut or left-out variable, for the cell and the request view."""


def mentioned(prompt: str) -> list[str]:
    """The ``@name`` paths of `prompt`, outside code spans, each once, in order."""
    plain = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), prompt)
    return list(dict.fromkeys(m.group(1) for m in _MENTION.finditer(plain)))


def unescaped(prompt: str) -> str:
    """The prompt as sent: ``\\@name`` written as ``@name``."""
    return _ESCAPED.sub("@", prompt)


def with_names(text: str) -> list[str]:
    """The names of a ``--with`` value (``df,model`` or ``df, model``)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def budget() -> tuple[int, int]:
    """(per variable, in all) in characters."""
    raw = os.environ.get(TOTAL_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        total = int(raw)
        return max(total // 3, 200), total
    return PER_VARIABLE, TOTAL


def attach(
    shell: Any,
    names: Sequence[str],
    *,
    redact: Callable[[str], str] | None = None,
    limits: tuple[int, int] | None = None,
) -> Attached | None:
    """The block describing `names` in `shell`'s namespace now (None for no names); raises
    `UsageError` naming every variable that cannot be attached."""
    names = list(dict.fromkeys(names))
    if not names:
        return None
    per_variable, total = limits if limits is not None else budget()
    state = KernelState.of(shell)
    found: list[tuple[str, str]] = []
    problems: list[str] = []
    for name in names:
        if name.split(".", 1)[0] not in shell.user_ns:
            problems.append(_missing(shell, name))
            continue
        try:
            value = lookup(shell, name)
        except ToolError as exc:
            problems.append(str(exc).replace(USE_PYTHON_EXEC, "").strip().rstrip("."))
            continue
        found.append((name, describe(value, name=name, state=state)))
    if problems:
        raise UsageError(
            "Nothing was sent: " + "; ".join(problems) + ". Write `\\@name` (or put it in "
            "backticks) to keep an @ in the prompt as text."
        )
    parts: list[str] = []
    cut: list[str] = []
    room = total
    for name, text in found:
        if redact is not None:
            text = redact(text)
        if room <= 0:
            cut.append(f"{name}: left out, the attachments' {total:,} characters were used")
            continue
        limit = min(per_variable, room)
        if len(text) > limit:
            cut.append(f"{name}: {limit:,} of {len(text):,} characters shown")
            text = text[:limit].rstrip() + f"\n[… cut: {limit:,} of {len(text):,} characters]"
        room -= len(text)
        parts.append(text)
    header = (
        "The person attached these kernel variables to the prompt (read-only descriptions, "
        "taken when the cell ran):"
    )
    body = "\n\n".join([header, *parts, *(f"[{line}]" for line in cut if "left out" in line)])
    return Attached(tuple(name for name, _ in found), f"{OPEN}\n{body}\n{CLOSE}", tuple(cut))


def _missing(shell: Any, name: str) -> str:
    head = name.split(".", 1)[0]
    known = sorted(user_variables(shell, callables=True))
    near = difflib.get_close_matches(head, known, n=3)
    hint = f" (did you mean {', '.join(f'`{n}`' for n in near)}?)" if near else ""
    return f"`{head}` is not a variable in the kernel{hint}"
