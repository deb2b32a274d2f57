"""Bash rule specifiers compiled to matchers over normalised command text.

``npm run test:*`` is a prefix at a word boundary, ``ls *`` a word boundary (not ``lsof``),
``git * main`` a wildcard anywhere, anything else exact text (quoted the way `normalize`
quotes it). `ShellRuleSet` indexes rules by their literal first word so a thousand rules cost
a dictionary lookup and a handful of regex matches, and keeps "first rule in order wins".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

from ...shell.commands import analyze
from ..paths import MEMO_SIZE, deny_form

T = TypeVar("T")
_MISS: Any = object()


@dataclass(frozen=True, slots=True)
class ShellPattern:
    """A Bash rule specifier compiled to a regex over normalised command text."""

    regex: str
    exact: bool
    head: str | None = None
    """The literal first word every match starts with, when there is one (for indexing)."""


@lru_cache(maxsize=8192)
def compile_shell_pattern(spec: str) -> ShellPattern:
    """``cmd:*`` prefix, ``cmd *`` word boundary, ``*`` anywhere, or exact text."""
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        body = spec[:-2].rstrip()
        return ShellPattern(_wild(body) + r"(?:\s.*)?", exact=False, head=_head(body))
    if spec.endswith(" *"):
        body = spec[:-2]
        return ShellPattern(_wild(body) + r"(?:\s.*)?", exact=False, head=_head(body))
    if not _has_wildcard(spec):
        text = _canonical(spec.replace("\\*", "*"))
        return ShellPattern(re.escape(text), exact=True, head=text.split(" ", 1)[0])
    return ShellPattern(_wild(spec), exact=False, head=_head(spec))


def _head(body: str) -> str | None:
    first = body.split(" ", 1)[0]
    plain = first and not any(c in first for c in "*\\'\"")
    return first if plain else None


def _has_wildcard(spec: str) -> bool:
    """Whether `spec` holds a ``*`` outside quotes and not escaped."""
    quote = ""
    escaped = False
    for c in spec:
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "*":
            return True
    return False


def _canonical(spec: str) -> str:
    """The one simple command `spec` is, as the analysis writes it (wrappers and assignments
    in front dropped); `spec` itself when it is more (a loop or a list around one command
    is not that command: ``for i in 1 2; do echo "$i"; done`` is not ``echo "$i"``)."""
    analysis = analyze(spec)
    if analysis.error or len(analysis.commands) != 1:
        return spec
    command = analysis.commands[0]
    if command.nested or not spec.rstrip().endswith(command.source_text):
        return spec
    return command.source_text


def _wild(text: str) -> str:
    pieces = re.split(r"(?<!\\)\*", text)
    return ".*".join(re.escape(p.replace("\\*", "*")) for p in pieces)


class ShellRuleSet(Generic[T]):
    """Many shell rules, indexed by their first word; `folded` (for deny and ask rules)
    ignores case, width and invisible characters. The first rule in order that matches wins.
    """

    def __init__(self, entries: Sequence[tuple[T, ShellPattern]], *, folded: bool) -> None:
        flags = re.DOTALL | (re.IGNORECASE if folded else 0)
        self._folded = folded
        by_head: dict[str, list[tuple[int, T, re.Pattern[str], bool]]] = {}
        headless: list[tuple[int, T, re.Pattern[str], bool]] = []
        for index, (item, pattern) in enumerate(entries):
            entry = (index, item, re.compile(pattern.regex, flags), pattern.exact)
            if pattern.head is None:
                headless.append(entry)
            else:
                by_head.setdefault(self._key(pattern.head), []).append(entry)
        # For speed, each head's bucket already holds the headless rules too, merged in rule
        # order, so a lookup neither copies nor sorts.
        self._headless = _in_order(headless)
        self._by_head = {head: _in_order([*bucket, *headless]) for head, bucket in by_head.items()}
        # What each text matched, by `exact_only` (a pure function of the text: the rules
        # never change); bounded, cleared when full.
        self._memo: tuple[dict[str, T | None], dict[str, T | None]] = ({}, {})

    def _key(self, word: str) -> str:
        return deny_form(word).casefold() if self._folded else word

    def __bool__(self) -> bool:
        return bool(self._by_head or self._headless)

    def match(self, texts: Iterable[str], *, exact_only: bool = False) -> T | None:
        """The first item whose pattern matches one of `texts` (exact rules only, if asked)."""
        memo = self._memo[exact_only]
        last = None
        for text in texts:
            if text == last:
                continue
            last = text
            found = memo.get(text, _MISS)
            if found is _MISS:
                found = self._match_text(text, exact_only)
                if len(memo) >= MEMO_SIZE:
                    memo.clear()
                memo[text] = found
            if found is not None:
                return found
        return None

    def _match_text(self, text: str, exact_only: bool) -> T | None:
        subject = deny_form(text) if self._folded else text
        head = subject.split(" ", 1)[0]
        bucket = self._by_head.get(self._key(head) if self._folded else head, self._headless)
        for item, pattern, exact in bucket:
            if (exact or not exact_only) and pattern.fullmatch(subject):
                return item
        return None


def _in_order(
    entries: list[tuple[int, T, re.Pattern[str], bool]],
) -> tuple[tuple[T, re.Pattern[str], bool], ...]:
    """`entries` sorted by rule index, the index dropped."""
    return tuple((item, pattern, exact) for _i, item, pattern, exact in sorted(entries, key=_index))


def _index(entry: tuple[int, object, object, bool]) -> int:
    return entry[0]
