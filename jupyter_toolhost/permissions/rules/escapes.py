"""The escaping Claude Code uses inside a rule's parentheses, read and written.

Claude Code 2.1 saves an "Always allow" rule with each ``(`` and ``)`` of the command written
``\\(`` and ``\\)``, and each backslash doubled, so that the rule's own parentheses stay
unambiguous: ``echo "Waiting... ($i/6)"`` is saved as ``Bash(echo "Waiting... \\($i/6\\)")``.
`unescape` reads such a specifier back to the text it names; `escape` writes one (our own
"Always allow" suggestions use it, so a rule this package offers reads back to what ran).

A backslash before any other character is kept as it is: it belongs to the pattern (``\\*``
is a literal star in a Bash rule) or to the command itself.
"""

from __future__ import annotations

_ESCAPED = frozenset("()\\")


def unescape(specifier: str) -> str:
    """``\\(`` → ``(``, ``\\)`` → ``)``, ``\\\\`` → ``\\``; every other character as written."""
    if "\\" not in specifier:
        return specifier
    out: list[str] = []
    at = 0
    while at < len(specifier):
        char = specifier[at]
        if char == "\\" and at + 1 < len(specifier) and specifier[at + 1] in _ESCAPED:
            out.append(specifier[at + 1])
            at += 2
            continue
        out.append(char)
        at += 1
    return "".join(out)


def escape(text: str) -> str:
    """The specifier that `unescape` reads back as `text` (``\\``, ``(`` and ``)`` escaped)."""
    return "".join("\\" + c if c in _ESCAPED else c for c in text)
