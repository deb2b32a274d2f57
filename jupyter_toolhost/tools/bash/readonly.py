"""Which shell commands are provably read-only (and so safe to run beside other calls).

A command qualifies only when it parses (with `shlex`) into a pipeline of known read-only
programs: no redirection, no command or process substitution, no variables, no `;`, `&`,
`&&` or `||`, no environment assignments, and no option that makes a reader write or run
something (`find -exec`, `rg --pre`, `git diff --output`, ...). Anything else is treated as
a write: the answer errs on the side of running a command alone.
"""

from __future__ import annotations

import shlex

READ_ONLY_PROGRAMS = frozenset(
    {"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "git", "pwd", "echo"}
)
GIT_READ_ONLY = frozenset({"status", "log", "diff", "show"})
_FIND_WRITES = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_RG_RUNS = ("--pre", "--search-zip", "-z")
_GIT_WRITES = ("--output", "--ext-diff")
_FORBIDDEN_CHARS = frozenset("$`\n\r")


def is_read_only_command(command: str) -> bool:
    """True only when every part of `command` is a known read-only program use."""
    if not command.strip() or _FORBIDDEN_CHARS.intersection(command):
        return False
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return False
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            segments.append([])
        elif token and set(token) <= set("();<>|&"):
            return False
        else:
            segments[-1].append(token)
    return all(segment and _read_only_segment(segment) for segment in segments)


def _read_only_segment(argv: list[str]) -> bool:
    program, args = argv[0], argv[1:]
    if program not in READ_ONLY_PROGRAMS:
        return False
    if program == "find":
        return not any(arg in _FIND_WRITES for arg in args)
    if program == "rg":
        return not any(arg.startswith(_RG_RUNS) for arg in args)
    if program == "git":
        if not args or args[0] not in GIT_READ_ONLY:
            return False
        return not any(arg.startswith(_GIT_WRITES) for arg in args[1:])
    return True
