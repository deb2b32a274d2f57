"""Which shell commands are provably read-only, and so safe to run beside other calls.

The shell library decides this for both the permission engine and the orchestrator:
`jupyter_toolhost.shell.safety.line_is_read_only`. A line qualifies only when
each of its commands is a known reader used without a writing option, nothing is redirected
into a file, no operand is computed by the shell (a variable, a substitution, input from
``xargs``), and no ``cd`` moves the directory the next call starts in. Anything else runs
alone.
"""

from __future__ import annotations

from ...shell.safety import line_is_read_only


def is_read_only_command(command: str) -> bool:
    """True only when every part of `command` is a known read-only program use."""
    return line_is_read_only(command)
