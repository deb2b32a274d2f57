"""The input transformer that turns a `%%agent` cell into one top-level `await`.

ipykernel (>= 7.4) handles widget comm messages while an async cell awaits, so the cell
must *be* an awaiting async cell, not a cell magic that blocks. This transformer runs
among IPython's cleanup transforms (before its own `%%magic` handling) and rewrites::

    %%agent --mode plan
    What is in data.csv?

into a single line that awaits the extension's entry point with the option line and the
body. `%%agent?` is left alone so IPython shows the help. A cell that is only
`%agent compact` (which awaits the model), `%agent mcp ...` (which awaits a server) or
`%agent undo ...` (which awaits a confirmation) becomes an `await` the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

ENTRY_MODULE = "jupyter_toolhost.jupyter.cell"
ENTRY_FUNCTION = "run_agent_cell"
COMMAND_FUNCTION = "run_agent_command"
_AGENT_LINE = re.compile(r"^%%agent(?:\s|$)")
_ASYNC_COMMAND = re.compile(r"^\s*%agent\s+(compact|(?:mcp|undo)(?:\s+\S.*)?)\s*$")


def is_agent_cell(lines: list[str]) -> bool:
    """Whether a cell (as lines) is a `%%agent` cell (not `%%agent?`)."""
    return bool(lines) and bool(_AGENT_LINE.match(lines[0]))


def agent_cell_transformer(lines: list[str]) -> list[str]:
    """IPython cleanup transform: a cell starting with `%%agent` becomes one `await`."""
    if not is_agent_cell(lines):
        command = _ASYNC_COMMAND.match("".join(lines)) if len(lines) == 1 else None
        if command is None:
            return lines
        return [
            f"await __import__({ENTRY_MODULE!r}, fromlist=['_']).{COMMAND_FUNCTION}"
            f"({command.group(1)!r})\n"
        ]
    option_line = lines[0][len("%%agent") :].strip()
    body = "".join(lines[1:])
    return [
        f"await __import__({ENTRY_MODULE!r}, fromlist=['_']).{ENTRY_FUNCTION}"
        f"({option_line!r}, {body!r})\n"
    ]


def make_transformer(shell: Any) -> Callable[[list[str]], list[str]]:
    """The transformer for `shell`: with `%autoawait off` the cell is left to the cell
    magic (which cannot take clicks while it runs, and says so)."""

    def transform(lines: list[str]) -> list[str]:
        if not getattr(shell, "autoawait", False):
            return lines
        return agent_cell_transformer(lines)

    transform.toolhost = True  # type: ignore[attr-defined]
    return transform
