"""Turning tool names, hints, descriptions and queries into search terms.

Owns the tokenizer shared by every ranker: tool names split on case, ``__``, ``_`` and
``-`` (``mcp__forge__create_issue`` → ``forge``, ``create``, ``issue``), a short English
stop list, and a light suffix-stripping stemmer so that "staged", "stage" and "staging" meet.
"""

from __future__ import annotations

import re

MCP_PREFIX = "mcp__"

_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_STOPWORD_TEXT = """
    a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing done for from had has have having he
    her here hers him his how i if in into is it its itself just let me mine my myself
    no nor of off on once only or other our ours out over own please same she should so
    some such than that the their theirs them then there these they this those through
    to too under until up us very via was we were what when where which while who whom
    why will with would you your yours yourself
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def split_identifier(text: str) -> list[str]:
    """Split an identifier or phrase into lower-case words: case changes, `_`, `-`, `__`."""
    words: list[str] = []
    for chunk in _WORD.findall(text):
        words.extend(part.lower() for part in _CAMEL.findall(chunk))
    return words


def split_tool_name(name: str) -> tuple[str | None, list[str]]:
    """(server, words of the tool's own name); server is None for non-MCP names."""
    if name.startswith(MCP_PREFIX):
        rest = name[len(MCP_PREFIX) :]
        server, sep, tool = rest.partition("__")
        if sep:
            return server, split_identifier(tool)
        return None, split_identifier(rest)
    return None, split_identifier(name)


def stem(word: str) -> str:
    """A light English stemmer: plural, -ing, -ed, -ly, -ment, -ation and -er endings, then
    a final 'e', and 'y' made 'i' (so "notify", "notified" and "notification" meet)."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 7:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 6:
        word = _undouble(word[:-2])
    if word.endswith("ication") and len(word) >= 10:
        word = word[:-6]
    elif word.endswith("ation") and len(word) >= 9:
        word = word[:-5]
    elif word.endswith("ment") and len(word) >= 9:
        word = word[:-4]
    elif (word.endswith("ly") and len(word) >= 6) or (word.endswith("er") and len(word) >= 7):
        word = word[:-2]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if word.endswith("y") and len(word) > 3:
        word = word[:-1] + "i"
    return word


def _undouble(word: str) -> str:
    if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Search terms of free text: split, stop words dropped, stemmed."""
    return [stem(word) for word in split_identifier(text) if word not in STOPWORDS]
