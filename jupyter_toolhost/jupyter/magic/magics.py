"""The `%agent` / `%%agent` magics: a thin shell that parses options and calls the host.

A `%%agent` cell normally never reaches the cell magic: the input transformer rewrites it
into an awaiting async cell (which is what lets approval clicks through while it runs). The
cell magic is the fallback for front ends that call `run_cell_magic` directly.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from .help_text import full_reference

HELP = full_reference()
"""The full reference (`%agent?`); `%agent help` is the short usage (`help_text`)."""

__all__ = ["HELP", "ToolHostMagics"]


@magics_class
class ToolHostMagics(Magics):
    """Registers `%agent` and `%%agent` for one shell."""

    def __init__(self, shell: Any, host: Any) -> None:
        super().__init__(shell)
        self.host = host

    @line_cell_magic
    @no_var_expand
    def agent(self, line: str, cell: str | None = None) -> Any:
        # Taken as typed: IPython would otherwise expand `{...}` and `$name` in the line
        # first, and `%agent check Bash {"command": "ls"}` would reach here as something
        # else (a rule, a command or a path keeps its braces and dollars too).
        if cell is None:
            from .commands import run_line  # on first use: keeps `%load_ext` fast

            return run_line(self.host, line)
        return self.host.run_cell_blocking(line, cell)


ToolHostMagics.agent.__doc__ = HELP
