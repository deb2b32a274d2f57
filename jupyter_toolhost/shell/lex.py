"""The shell words permission checks see: `Word`, `Redirect` and `ShellSyntaxError`.

`shell_parse` builds them from bash's syntax tree (tree-sitter-bash); `shell` turns them
into the commands rules match.
"""

from __future__ import annotations

from dataclasses import dataclass


class ShellSyntaxError(ValueError):
    """The command line could not be followed exactly; it must not be auto-allowed."""


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: its value after quote removal, and what the shell would do to it."""

    value: str
    """The word without quotes; substitutions and expansions keep their source text."""
    raw: str
    quoted: bool = False
    dynamic: bool = False
    """Contains a parameter expansion or a command substitution: its value is not known."""
    glob: bool = False
    """Contains an unquoted ``*``, ``?`` or ``[``: the shell may expand it to file names."""
    ansi_c: bool = False
    """Written (partly) as ANSI-C ``$'...'`` or locale ``$"..."`` quoting."""
    substituted: bool = False
    """Contains a command or process substitution (``$(...)``, backticks, ``<(...)``)."""
    braced: bool = False
    """One of the words a brace expansion (``{a,b}``, ``{1..3}``) produced."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection: operator, file descriptor and target word."""

    op: str
    fd: str
    target: Word
