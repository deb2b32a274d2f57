"""Which shell commands only read, and which only create or move files (for acceptEdits).

Small, explicit lists: a command is read-only here only if no option it accepts can write
a file or run another program. Anything not listed is treated as writing.
"""

from __future__ import annotations

from .shell import Command

_READ_ONLY = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo",
        "printf", "which", "stat", "file", "du", "df", "diff", "cut", "tr", "basename",
        "dirname", "realpath", "readlink", "find", "git", "tree", "true", "false", "test",
        "[", "nl", "od", "hexdump", "md5sum", "sha1sum", "sha256sum", "whoami", "id", "uname",
        "date", "cmp", "comm", "column",
    }
)  # fmt: skip
_FORBIDDEN_OPTIONS: dict[str, tuple[str, ...]] = {
    "rg": ("--pre",),
    "file": ("-C", "--compile"),
    "tree": ("-o",),
    "date": ("-s", "--set"),
    "git": ("--output", "-o", "--ext-diff", "--exec"),
}
_GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "rev-parse", "ls-files", "blame"})
_CREATES_FILES = frozenset({"mkdir", "touch", "mv", "cp"})


def is_read_only(command: Command) -> bool:
    """Whether the command only reads (listed, with no option that writes or runs code).

    Redirections are not judged here: their targets are checked as file writes.
    """
    if command.risky or not command.parts or command.name not in _READ_ONLY:
        return False
    if command.name == "git" and (
        len(command.parts) < 2 or command.parts[1].value not in _GIT_READ_ONLY
    ):
        return False
    forbidden = _FORBIDDEN_OPTIONS.get(command.name, ())
    return not any(w.value.startswith(forbidden) for w in command.parts[1:] if forbidden)


def creates_or_moves_files(command: Command) -> bool:
    """``mkdir``, ``touch``, ``mv``, ``cp``: allowed by acceptEdits inside working dirs."""
    return not command.risky and command.name in _CREATES_FILES
