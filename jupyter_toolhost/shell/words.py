"""Shell words: `Word`, `Redirect`, and what bash makes of a word's text.

`parse` builds words from bash's syntax tree (tree-sitter-bash); `commands` turns them into
the commands rules match. Here too: ANSI-C ``$'...'`` decoding and brace expansion.

Both follow bash exactly where a permission check depends on it: ``$'\\x72m'`` is ``rm``
and ``{rm,-rf,x}`` is three words ``rm -rf x``. A word is a list of `Piece`s; only
unquoted literal text takes part in brace expansion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from ..core.errors import ParseError


class ShellSyntaxError(ParseError):
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


MAX_EXPANSION = 256
"""A word that brace-expands to more words than this is not expanded (`TooManyWords`)."""

_SIMPLE_ESCAPES = {
    "a": 0x07, "b": 0x08, "e": 0x1B, "E": 0x1B, "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09,
    "v": 0x0B, "\\": 0x5C, "'": 0x27, '"': 0x22, "?": 0x3F,
}  # fmt: skip
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
_GLOB = frozenset("*?[")
_SEQUENCE = re.compile(
    r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?"
)


class TooManyWords(ParseError):
    """Brace expansion would produce more than `MAX_EXPANSION` words."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A stretch of one word: literal text, quoted or not, or an expansion's source text."""

    text: str
    quoted: bool = False
    dynamic: bool = False

    @property
    def literal(self) -> bool:
        return not self.quoted and not self.dynamic


def decode_ansi_c(body: str) -> str:
    """The value of ``$'body'`` as bash computes it (UTF-8; a NUL ends the string)."""
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8", "surrogatepass")
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
        elif e in _OCTAL:
            digits = e
            while len(digits) < 3 and i < n and body[i] in _OCTAL:
                digits += body[i]
                i += 1
            out.append(int(digits, 8) & 0xFF)
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = ""
            while len(digits) < width and i < n and body[i] in _HEX:
                digits += body[i]
                i += 1
            if not digits:
                out += b"\\" + e.encode()
            elif e == "x":
                out.append(int(digits, 16))
            else:
                out += _code_point(int(digits, 16))
        elif e == "c" and i < n:
            control = body[i]
            i += 1
            if control == "\\" and i < n and body[i] == "\\":
                i += 1
            out.append(0x7F if control == "?" else ord(control.upper()) & 0x1F)
        else:
            out += ("\\" + e).encode("utf-8", "surrogatepass")
    value = out.split(b"\0", 1)[0]
    return value.decode("utf-8", "replace")


def _code_point(value: int) -> bytes:
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return "\ufffd".encode()
    return chr(value).encode("utf-8")


def unescape_unquoted(text: str) -> list[Piece]:
    """An unquoted word's text: ``\\x`` is a quoted ``x``, ``\\<newline>`` disappears."""
    if "\\" not in text:
        return [Piece(text)]
    pieces: list[Piece] = []
    start = i = 0
    while i < len(text):
        if text[i] == "\\":
            if start < i:
                pieces.append(Piece(text[start:i]))
            if i + 1 < len(text) and text[i + 1] != "\n":
                pieces.append(Piece(text[i + 1], quoted=True))
            i += 2
            start = i
        else:
            i += 1
    if start < len(text):
        pieces.append(Piece(text[start:]))
    return pieces


def unescape_double(text: str) -> str:
    """Text inside double quotes: only ``\\$ \\` \\" \\\\`` and ``\\<newline>`` are escapes."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def make_word(pieces: list[Piece], raw: str, **extra: bool) -> Word:
    """One `Word` from its pieces."""
    if len(pieces) == 1:
        p = pieces[0]
        glob = p.literal and not _GLOB.isdisjoint(p.text)
        return Word(p.text, raw, p.quoted, p.dynamic, glob, **extra)
    return Word(
        "".join(p.text for p in pieces),
        raw,
        quoted=any(p.quoted for p in pieces),
        dynamic=any(p.dynamic for p in pieces),
        glob=any(p.literal and not _GLOB.isdisjoint(p.text) for p in pieces),
        **extra,
    )


def may_expand(pieces: list[Piece]) -> bool:
    """Whether the word has an unquoted ``{`` with a ``,`` or ``..`` after it (cheap test)."""
    text = "".join(p.text if p.literal else "\0" for p in pieces)
    brace = text.find("{")
    return brace >= 0 and "}" in text[brace:] and ("," in text or ".." in text)


def expand_braces(pieces: list[Piece]) -> list[list[Piece]]:
    """Brace expansion of one word, left to right like bash; raises `TooManyWords`."""
    tokens: list[Piece] = []
    for p in pieces:
        tokens.extend(Piece(c) for c in p.text) if p.literal else tokens.append(p)
    return [_merge(t) for t in _expand(tokens)]


def _merge(tokens: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for t in tokens:
        if merged and t.literal and merged[-1].literal:
            merged[-1] = Piece(merged[-1].text + t.text)
        else:
            merged.append(t)
    return merged


def _is(token: Piece, char: str) -> bool:
    return token.literal and token.text == char


def _expand(tokens: list[Piece]) -> list[list[Piece]]:
    for start, token in enumerate(tokens):
        if not _is(token, "{") or (start and _is(tokens[start - 1], "$")):
            continue
        found = _alternatives(tokens, start)
        if found is None:
            continue
        end, alternatives = found
        head, tails = tokens[:start], _expand(tokens[end + 1 :])
        out: list[list[Piece]] = []
        for alternative in alternatives:
            for middle in _expand(alternative):
                for tail in tails:
                    out.append(head + middle + tail)
                    if len(out) > MAX_EXPANSION:
                        raise TooManyWords("brace expansion makes too many words")
        return out
    return [tokens]


def _alternatives(tokens: list[Piece], start: int) -> tuple[int, list[list[Piece]]] | None:
    depth = 0
    commas: list[int] = []
    for i in range(start + 1, len(tokens)):
        t = tokens[i]
        if _is(t, "{"):
            depth += 1
        elif _is(t, "}"):
            if depth:
                depth -= 1
                continue
            if commas:
                bounds = [start, *commas, i]
                return i, [tokens[a + 1 : b] for a, b in pairwise(bounds)]
            sequence = _sequence(tokens[start + 1 : i])
            return None if sequence is None else (i, sequence)
        elif _is(t, ",") and depth == 0:
            commas.append(i)
    return None


def _sequence(tokens: list[Piece]) -> list[list[Piece]] | None:
    if not all(t.literal for t in tokens):
        return None
    match = _SEQUENCE.fullmatch("".join(t.text for t in tokens))
    if match is None:
        return None
    first, last, step, a, b, letter_step = match.groups()
    if first is not None:
        lo, hi = int(first), int(last)
        width = max(len(first), len(last)) if _padded(first) or _padded(last) else 0
        values = [f"{v:0{width}d}" for v in _range(lo, hi, step)]
    else:
        values = [chr(v) for v in _range(ord(a), ord(b), letter_step)]
    return [[Piece(v)] for v in values]


def _padded(number: str) -> bool:
    digits = number.lstrip("-")
    return len(digits) > 1 and digits.startswith("0")


def _range(lo: int, hi: int, step: str | None) -> range:
    size = abs(int(step)) if step and int(step) else 1
    if (abs(hi - lo) // size) + 1 > MAX_EXPANSION:
        raise TooManyWords("brace expansion makes too many words")
    return range(lo, hi + 1, size) if lo <= hi else range(lo, hi - 1, -size)
