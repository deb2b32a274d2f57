"""`%agent check`: a permission `CheckReport` shown as a table of modes, the shell parse and
a few notes ("Always allow would add: ...", hooks, auto mode)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from IPython.display import display

from ...permissions.check import reason_text, shell_details
from .render import Rendered, notice_display, relative_text, short, table_display

if TYPE_CHECKING:
    from ...permissions.check import CheckReport

MODE_COLUMNS = ("mode", "decision", "reason", "rule", "settings file")
SHELL_COLUMNS = ("command", "program", "touches", "why it may be asked")


class Displays(Rendered):
    """Several displays shown one after another; as a plain `Rendered` it is the first."""

    def __init__(self, parts: Sequence[Rendered]) -> None:
        super().__init__(parts[0].data, parts[0].metadata)
        self.parts = list(parts)

    def _ipython_display_(self) -> None:

        for part in self.parts:
            display(part)

    def __repr__(self) -> str:
        return "\n\n".join(repr(part) for part in self.parts)


def check_display(report: CheckReport, *, cwd: str) -> Displays:
    """The report as displays; paths under `cwd` are shown relative to it."""

    rows = []
    for check in report.modes:
        where = relative_text(check.settings_file or "", cwd)
        if check.scope and where and where != check.scope:
            where = f"{where} ({check.scope})"
        mode = f"{check.mode} (now)" if check.mode == report.current_mode else check.mode
        rows.append(
            (mode, check.behavior, relative_text(reason_text(check), cwd), check.rule, where)
        )
    title = f"permission check: {report.tool} {short(_summary(report), 80)}"
    parts = [table_display("check", MODE_COLUMNS, rows, title=title)]
    if report.shell:
        shell_rows = []
        for command in report.shell:
            details = shell_details(command)
            touches = [d for d in details[1:] if d.split(" ", 1)[0] in _TOUCHES]
            why = [d for d in details[1:] if d not in touches]
            shell_rows.append(
                (
                    command.source_text or "(a redirection of the line)",
                    command.program,
                    relative_text("; ".join(touches), cwd),
                    relative_text("; ".join(why), cwd),
                )
            )
        parts.append(table_display("check-shell", SHELL_COLUMNS, shell_rows, title="shell parse"))
    notes = list(report.notes)
    if report.shell_error:
        notes.insert(0, f"The command line could not be analysed: {report.shell_error}")
    if notes:
        parts.append(notice_display(relative_text("\n".join(notes), cwd)))
    return Displays(parts)


_TOUCHES = ("paths", "writes", "reads", "globs")


def _summary(report: CheckReport) -> str:
    if report.command is not None:
        return report.command
    if report.path:
        return report.path
    return json.dumps(dict(report.input), ensure_ascii=False, default=str)
