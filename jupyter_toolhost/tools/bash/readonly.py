"""Which shell commands are provably read-only, and so safe to run beside other calls.

One list decides this for both the permission engine and the orchestrator:
`jupyter_toolhost.shell.safety.is_read_only`, applied to every command the line
would run as the bash grammar parses it. A line qualifies only when each of its commands
is a known reader used without a writing option, nothing is redirected into a file, no
operand is computed by the shell (a variable, a substitution, input from ``xargs``), and no
``cd`` moves the directory the next call starts in. Anything else runs alone.
"""

from __future__ import annotations

from ...shell.commands import analyze
from ...shell.safety import is_read_only


def is_read_only_command(command: str) -> bool:
    """True only when every part of `command` is a known read-only program use."""
    if not command.strip():
        return False
    analysis = analyze(command)
    if analysis.error or not analysis.commands:
        return False
    for item in analysis.commands:
        if not item.parts:
            continue
        if item.changes_directory or not is_read_only(item):
            return False
        if any(r.op not in ("<", "<&") for r in item.file_redirects()):
            return False
        if any(w.dynamic for w in item.path_args()) or any(
            r.target.dynamic for r in item.file_redirects()
        ):
            return False
        if len(item.source) != len(item.parts) and _fed_by_xargs(item.source):
            return False
    return True


def _fed_by_xargs(source: tuple[object, ...]) -> bool:
    return any(getattr(w, "value", "").rsplit("/", 1)[-1] == "xargs" for w in source)
