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
from typing import Generic, TypeVar

from .paths import deny_form
from .shell import analyze

T = TypeVar("T")


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
    analysis = analyze(spec)
    if analysis.error or len(analysis.commands) != 1:
        return spec
    return analysis.commands[0].source_text


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
        self._by_head: dict[str, list[tuple[int, T, re.Pattern[str], bool]]] = {}
        self._headless: list[tuple[int, T, re.Pattern[str], bool]] = []
        for index, (item, pattern) in enumerate(entries):
            entry = (index, item, re.compile(pattern.regex, flags), pattern.exact)
            if pattern.head is None:
                self._headless.append(entry)
            else:
                self._by_head.setdefault(self._key(pattern.head), []).append(entry)

    def _key(self, word: str) -> str:
        return deny_form(word).casefold() if self._folded else word

    def __bool__(self) -> bool:
        return bool(self._by_head or self._headless)

    def match(self, texts: Iterable[str], *, exact_only: bool = False) -> T | None:
        """The first item whose pattern matches one of `texts` (exact rules only, if asked)."""
        last = None
        for text in texts:
            if text == last:
                continue
            last = text
            subject = deny_form(text) if self._folded else text
            head = subject.split(" ", 1)[0]
            bucket = self._by_head.get(self._key(head) if self._folded else head, ())
            candidates = sorted((*bucket, *self._headless)) if self._headless else bucket
            for _index, item, pattern, exact in candidates:
                if (exact or not exact_only) and pattern.fullmatch(subject):
                    return item
        return None
