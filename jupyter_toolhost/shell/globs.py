"""Shell globs checked by what they can match, not by how they are spelled.

`bracket` turns a bash bracket expression (``[!a-c]``, ``[[:lower:]]``, ``[]x]``) into a
regular-expression class that matches every character bash's would (POSIX classes are
widened to every non-ASCII letter: a check that errs toward "may match" fails closed).
`can_reach(glob, directory)` says whether an absolute glob can match `directory`, something
inside it, or one of its parents: component by component, each glob component against the
directory's component at the same depth; ``**`` and extglob ``@(...)``-style groups match
anything. `expand` lists what a glob matches on disk now (a file may still appear between
the check and the run, which is why `can_reach` is asked too).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

_CLASSES = {
    "alpha": "a-zA-Z\u00aa-\U0010ffff",
    "alnum": "0-9a-zA-Z\u00aa-\U0010ffff",
    "digit": "0-9",
    "lower": "a-z\u00aa-\U0010ffff",
    "upper": "A-Z\u00aa-\U0010ffff",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "punct": "!-/:-@\\[-`{-~",
    "xdigit": "0-9A-Fa-f",
    "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~\u00a0-\U0010ffff",
    "graph": "!-~\u00a1-\U0010ffff",
    "word": "\\w",
}
_EXTGLOB = re.compile(r"[@!+*?]\(")
_WILD = frozenset("*?[")
MAX_EXPANDED = 2_000
"""Paths `expand` lists before it stops (the caller treats a cut-off list as "may match")."""


def bracket(glob: str, start: int) -> tuple[str, int] | None:
    """The regex class for the bracket expression at ``glob[start] == "["`` and the index
    after it, or None when it does not close (then ``[`` is a literal character)."""
    i = start + 1
    negate = i < len(glob) and glob[i] in "!^"
    if negate:
        i += 1
    parts: list[str] = []
    first = True
    while i < len(glob):
        c = glob[i]
        if c == "]" and not first:
            body = "".join(parts) or "\\x00"
            return ("[^/" + body + "]" if negate else "[" + body + "]"), i + 1
        first = False
        if c == "[" and i + 1 < len(glob) and glob[i + 1] in ":=.":
            kind = glob[i + 1]
            close = glob.find(kind + "]", i + 2)
            if close < 0:
                parts.append("\\[")
                i += 1
                continue
            name = glob[i + 2 : close]
            if kind == ":":
                parts.append(_CLASSES.get(name, "\\x00-\U0010ffff"))
            else:
                parts.append("".join("\\" + ch if not ch.isalnum() else ch for ch in name))
            i = close + 2
            continue
        if c == "\\" and i + 1 < len(glob):
            parts.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if c == "-" and parts and i + 1 < len(glob) and glob[i + 1] != "]":
            parts.append("-")
            i += 1
            continue
        parts.append(re.escape(c) if c in "\\[]^-" else c)
        i += 1
    return None


@lru_cache(maxsize=4096)
def component_regex(component: str) -> re.Pattern[str]:
    """One path component of a glob as a regex over one component (``*`` stays inside it)."""
    if _EXTGLOB.search(component):
        return re.compile(r"[^/]*", re.DOTALL)
    out: list[str] = []
    i = 0
    while i < len(component):
        c = component[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (found := bracket(component, i)) is not None:
            out.append(found[0])
            i = found[1]
            continue
        elif c == "\\" and i + 1 < len(component):
            out.append(re.escape(component[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL | re.IGNORECASE)


def component_matches(part: str, name: str) -> bool:
    """Whether the glob component `part` can match the file name `name` (case-insensitively).
    As in bash without ``dotglob`` (``shopt`` and ``GLOBIGNORE`` are outside what the check
    allows), a leading dot is matched only by a literal dot."""
    if name.startswith(".") and not part.startswith("."):
        return False
    if not _WILD.intersection(part) and "\\" not in part and _EXTGLOB.search(part) is None:
        return part.casefold() == name.casefold()
    return component_regex(part).fullmatch(name) is not None


def _components(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def can_reach(glob: str, directory: str) -> bool:
    """Whether the absolute `glob` can match `directory`, a path inside it, or a parent of it
    (case-insensitively: a deny rule is folded too)."""
    wanted = _components(directory)
    parts = _components(glob)
    for depth, part in enumerate(parts):
        if depth >= len(wanted):
            return True  # the glob goes on inside `directory`
        if "**" in part:
            return True
        if not component_matches(part, wanted[depth]):
            return False
    return True  # the glob names `directory` itself or one of its parents


def expand(glob: str) -> tuple[list[str], bool]:
    """The existing paths the absolute `glob` matches now, dot files included, and whether
    the list is complete (False past `MAX_EXPANDED` or where ``**`` would recurse)."""
    found = ["/"]
    complete = True
    for part in _components(glob):
        if "**" in part:
            return found, False
        wild = bool(_WILD.intersection(part)) or _EXTGLOB.search(part) is not None
        nxt: list[str] = []
        for base in found:
            if not wild:
                path = os.path.join(base, part.replace("\\", ""))
                if os.path.lexists(path):
                    nxt.append(path)
                continue
            try:
                with os.scandir(base) as entries:
                    nxt.extend(e.path for e in entries if component_matches(part, e.name))
            except OSError:
                continue
            if len(nxt) > MAX_EXPANDED:
                return nxt, False
        found = nxt
        if not found:
            break
    return found, complete
