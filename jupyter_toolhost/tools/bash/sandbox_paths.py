"""Deny rules turned into the concrete, existing paths a shell sandbox must cover.

A Read deny becomes paths to hide, an Edit deny paths to make read-only. A pattern without
wildcards below its static prefix (``./secrets/**``, ``~/.ssh``) is that prefix, taken
case-insensitively as deny rules compare (``./Secrets/**`` also covers ``secrets``). A pattern
with wildcards (``**/.env``, ``*.key``, ``./keys/*.pem``) is matched against every entry of
a breadth-first walk of its static prefix — or, when that prefix holds a session root (a
pattern that can match anywhere below the working directory's parents), of the roots alone,
and then the answer is not `complete`. The walk lists at most `WALK_LIMIT` entries in all;
the directories it did not get to are hidden whole (safe: nothing unlisted is visible, at
the cost of hiding too much in very big trees). Symlinks count by their own path and their
target, and the resolved target of every covered path is covered too. Paths that do not
exist are left out: the sandbox is planned again for every command.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...permissions.paths import CompiledPattern, PathRuleSet, deny_form, fold, is_inside
from ...permissions.rules.ruleset import CompiledRules

WALK_LIMIT = 20_000
"""Directory entries one planning walk lists before it hides what it did not reach."""


@dataclass(frozen=True, slots=True)
class SandboxPaths:
    """What a sandbox must hide and make read-only, as existing absolute paths."""

    hidden: tuple[str, ...] = ()
    """Paths a Read deny protects (and their resolved targets): not visible inside."""
    read_only: tuple[str, ...] = ()
    """Paths an Edit deny protects (and their resolved targets): read-only inside."""
    complete: bool = True
    """Every read-denied path is among `hidden`; False for a bare ``Read`` deny or a
    wildcard pattern that reaches above the session's roots."""
    walked: int = 0
    """Directory entries listed to match wildcard patterns."""
    truncated: tuple[str, ...] = ()
    """Directories hidden whole because the walk reached `WALK_LIMIT` before listing them."""


@dataclass(slots=True)
class _Walk:
    cwd: str
    roots: tuple[str, ...]
    limit: int
    listings: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    walked: int = 0


def sandbox_paths(
    compiled: CompiledRules,
    *,
    cwd: str,
    roots: Sequence[str],
    limit: int = WALK_LIMIT,
) -> SandboxPaths:
    """The existing paths the deny rules of `compiled` protect, for a sandbox to cover."""
    state = _Walk(cwd=cwd, roots=tuple(os.path.abspath(r) for r in roots) or (cwd,), limit=limit)
    deny = compiled.deny
    complete = "read" not in deny.classes
    hidden: dict[str, None] = {}
    read_only: dict[str, None] = {}
    targets: dict[str, None] = {}
    for sink, rules in ((hidden, deny.read), (read_only, deny.edit)):
        for _item, pattern in rules.patterns():
            if _is_static(pattern):
                for path in _variants(state, pattern.static_prefix):
                    _add(sink, path)
                continue
            walk_roots, whole = _walk_roots(pattern.static_prefix, state.roots)
            if sink is hidden:
                complete = complete and whole
            targets.update(dict.fromkeys(walk_roots))
    truncated: list[str] = []
    if targets:
        truncated = _walk(state, _outermost(targets), deny.read, deny.edit, hidden, read_only)
    for path in truncated:
        _add(hidden, path)
    return SandboxPaths(
        hidden=tuple(hidden),
        read_only=tuple(p for p in read_only if p not in hidden),
        complete=complete,
        walked=state.walked,
        truncated=tuple(truncated),
    )


def _is_static(pattern: CompiledPattern) -> bool:
    """The pattern is its static prefix and everything below it (no wildcard to match)."""
    prefix = pattern.static_prefix.rstrip("/")
    return pattern.regex == re.escape(prefix) + r"(?:/.*)?"


def _walk_roots(prefix: str, roots: tuple[str, ...]) -> tuple[list[str], bool]:
    """Where to look for a wildcard pattern's matches, and whether that is everywhere."""
    inside = [r for r in roots if is_inside(r, prefix)]
    if not inside:
        return [prefix], True
    if any(is_inside(prefix, r) for r in inside):
        return [prefix], True
    return inside, False


def _outermost(paths: Iterable[str]) -> list[str]:
    ordered = sorted(paths, key=len)
    kept: list[str] = []
    for path in ordered:
        if not any(is_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def _add(sink: dict[str, None], path: str) -> None:
    if not os.path.lexists(path):
        return
    sink[path] = None
    real = os.path.realpath(path)
    if real != path and os.path.exists(real):
        sink[real] = None


def _variants(state: _Walk, path: str) -> list[str]:
    """`path` and every existing path equal to it in deny rules' folded comparison."""
    parts = [p for p in path.split("/") if p]
    found = ["/"]
    for part in parts:
        wanted = fold(part)
        following: list[str] = []
        for base in found:
            child = os.path.join(base, part)
            if os.path.lexists(child):
                following.append(child)
            for name in _listing(state, base):
                if name != part and fold(name) == wanted:
                    following.append(os.path.join(base, name))
        found = following
        if not found:
            return []
    return found


def _listing(state: _Walk, directory: str) -> list[str]:
    cached = state.listings.get(directory)
    if cached is None:
        try:
            cached = os.listdir(directory)
        except OSError:
            cached = []
        state.listings[directory] = cached
    return cached


def _walk(
    state: _Walk,
    starts: list[str],
    read: PathRuleSet[Any],
    edit: PathRuleSet[Any],
    hidden: dict[str, None],
    read_only: dict[str, None],
) -> list[str]:
    """Breadth-first over `starts`, filling `hidden` and `read_only`; returns the directories
    left unlisted when the walk ran out of budget."""
    read_any, edit_any = _prefilter(read), _prefilter(edit)
    queue: deque[str] = deque(s for s in starts if os.path.isdir(s))
    seen: set[tuple[int, int]] = set()
    while queue:
        if state.walked >= state.limit:
            return [d for d in queue if not _covered(d, hidden)]
        directory = queue.popleft()
        if _covered(directory, hidden):
            continue
        try:
            info = os.stat(directory)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            continue
        state.walked += len(listed)
        for entry in listed:
            path = entry.path
            names: tuple[str, ...] = (path,)
            link = entry.is_symlink()
            if link:
                real = os.path.realpath(path)
                names = (path, real) if real != path else names
            if read_any(names) and read.match(names) is not None:
                _add(hidden, path)
                continue
            edited = edit_any(names) and edit.match(names) is not None
            if edited and not _covered(path, read_only):
                _add(read_only, path)
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                queue.append(path)
    return []


def _prefilter(rules: PathRuleSet[Any]) -> Callable[[tuple[str, ...]], bool]:
    """One regex of every pattern, compiled as `PathRuleSet` compiles deny patterns: a cheap
    test that never misses a path the rule set matches (a hit is confirmed by the set)."""
    regexes = [unicodedata.normalize("NFKC", p.regex) for _item, p in rules.patterns()]
    if not regexes:
        return lambda _names: False
    combined = re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL | re.IGNORECASE)

    match = combined.fullmatch

    def test(names: tuple[str, ...]) -> bool:
        return any(map(match, map(_subject, names)))

    return test


def _subject(name: str) -> str:
    return name if name.isascii() else deny_form(name)


def _covered(path: str, hidden: dict[str, None]) -> bool:
    probe: str = path
    while True:
        if probe in hidden:
            return True
        parent: str = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
