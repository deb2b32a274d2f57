"""A small POSIX/bash tokenizer for permission checks: words, redirections, sub-commands.

It splits a command line into simple-command segments at ``&&``, ``||``, ``;``, ``|``,
``|&``, ``&``, newlines and parentheses, and lifts the commands inside ``$(...)``, backticks
and process substitutions ``<(...)``/``>(...)`` out as segments of their own (marked
nested). Quoting follows the shell: nothing is special inside single quotes; inside double
quotes only ``\\``, ``$`` and backticks are. Here-document bodies are skipped. Anything it
cannot follow exactly (an unbalanced quote or parenthesis, a substitution inside ``${...}``
or inside an unquoted here-document) raises `ShellSyntaxError`: the caller asks, never
allows.
"""

from __future__ import annotations

from dataclasses import dataclass

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
_REDIRECT_OPS = ("<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">|", ">&", ">")
_SEPARATORS = (";;&", "&&", "||", "|&", ";;", ";&", ";", "|", "&")
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}


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


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection: operator, file descriptor and target word."""

    op: str
    fd: str
    target: Word


Token = Word | Redirect


@dataclass(frozen=True, slots=True)
class Segment:
    """The tokens of one simple command, in order."""

    tokens: tuple[Token, ...]
    nested: bool = False
    """It came from inside a substitution (its output feeds another command)."""


class _Buf:
    __slots__ = ("dynamic", "glob", "quoted", "raw_start", "started", "value")

    def __init__(self) -> None:
        self.value: list[str] = []
        self.started = False
        self.quoted = False
        self.dynamic = False
        self.glob = False
        self.raw_start = -1

    def add(self, text: str, at: int, *, quoted: bool = False, dynamic: bool = False) -> None:
        if not self.started:
            self.started = True
            self.raw_start = at
        self.value.append(text)
        self.quoted |= quoted
        self.dynamic |= dynamic


def split_segments(source: str) -> list[Segment]:
    """All simple commands of a command line, nested ones included; raises `ShellSyntaxError`."""
    out: list[Segment] = []
    _Lexer(source, out, nested=False).parse(closer=None)
    return out


class _Lexer:
    def __init__(self, src: str, out: list[Segment], *, nested: bool, start: int = 0) -> None:
        self.src = src
        self.i = start
        self.out = out
        self.nested = nested
        self.heredocs: list[tuple[str, bool, bool]] = []

    def parse(self, closer: str | None) -> None:
        src, n = self.src, len(self.src)
        tokens: list[Token] = []
        buf = _Buf()
        pending: tuple[str, str] | None = None
        depth = 0

        def flush() -> None:
            nonlocal buf, pending
            if not buf.started:
                return
            word = Word(
                "".join(buf.value), src[buf.raw_start : self.i], buf.quoted, buf.dynamic, buf.glob
            )
            buf = _Buf()
            if pending is None:
                tokens.append(word)
                return
            op, fd = pending
            pending = None
            tokens.append(Redirect(op, fd, word))
            if op in ("<<", "<<-"):
                self.heredocs.append((word.value, op == "<<-", not word.quoted))

        def end_segment() -> None:
            nonlocal tokens
            flush()
            if pending is not None:
                raise ShellSyntaxError(f"redirection {pending[0]!r} has no target")
            if tokens:
                self.out.append(Segment(tuple(tokens), self.nested))
            tokens = []

        while self.i < n:
            c = src[self.i]
            if c == "#" and not buf.started:
                end = src.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c in " \t\r":
                flush()
                self.i += 1
            elif c == "\n":
                end_segment()
                self.i += 1
                self._skip_heredocs()
            elif c == "\\":
                if self.i + 1 >= n:
                    raise ShellSyntaxError("a backslash ends the command")
                if src[self.i + 1] != "\n":
                    buf.add(src[self.i + 1], self.i, quoted=True)
                self.i += 2
            elif c == "'":
                close = src.find("'", self.i + 1)
                if close < 0:
                    raise ShellSyntaxError("unbalanced single quote")
                buf.add(src[self.i + 1 : close], self.i, quoted=True)
                self.i = close + 1
            elif c == '"':
                self._double(buf)
            elif c == "`":
                self._backtick(buf)
            elif c == "$":
                self._dollar(buf, in_double=False)
            elif c == "&" and src.startswith("&>", self.i):
                flush()
                op = "&>>" if src.startswith("&>>", self.i) else "&>"
                pending = (op, "&")
                self.i += len(op)
            elif c in ";&|":
                end_segment()
                self.i += len(next(op for op in _SEPARATORS if src.startswith(op, self.i)))
            elif c in "<>":
                if not buf.started and src.startswith("(", self.i + 1):
                    start = self.i
                    self._substitution(self.i + 2)
                    buf.add(src[start : self.i], start, dynamic=True)
                    continue
                fd = ""
                if buf.started and not buf.quoted and "".join(buf.value).isdigit():
                    fd = "".join(buf.value)
                    buf = _Buf()
                else:
                    flush()
                if pending is not None:
                    raise ShellSyntaxError(f"redirection {pending[0]!r} has no target")
                op = next(op for op in _REDIRECT_OPS if src.startswith(op, self.i))
                pending = (op, fd)
                self.i += len(op)
            elif c == "(":
                if buf.started:
                    raise ShellSyntaxError("unexpected '(' inside a word")
                end_segment()
                depth += 1
                self.i += 1
            elif c == ")":
                end_segment()
                self.i += 1
                if depth > 0:
                    depth -= 1
                elif closer == ")":
                    return
                else:
                    raise ShellSyntaxError("unbalanced ')'")
            else:
                if c in "*?[":
                    buf.glob = True
                buf.add(c, self.i)
                self.i += 1
        if closer is not None:
            raise ShellSyntaxError("unclosed command substitution")
        if depth:
            raise ShellSyntaxError("unbalanced '('")
        end_segment()
        if self.heredocs:
            raise ShellSyntaxError("here-document without a body")

    def _skip_heredocs(self) -> None:
        src = self.src
        while self.heredocs:
            delimiter, strip_tabs, expands = self.heredocs.pop(0)
            while True:
                if self.i >= len(src):
                    raise ShellSyntaxError(f"here-document not closed by {delimiter!r}")
                end = src.find("\n", self.i)
                end = len(src) if end < 0 else end
                line = src[self.i : end]
                self.i = min(end + 1, len(src))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                if expands and ("$(" in line or "`" in line):
                    raise ShellSyntaxError("command substitution inside a here-document")

    def _double(self, buf: _Buf) -> None:
        src, n = self.src, len(self.src)
        start = self.i
        buf.add("", start, quoted=True)
        self.i += 1
        while self.i < n:
            c = src[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n:
                follower = src[self.i + 1]
                if follower in '$`"\\':
                    buf.add(follower, start, quoted=True)
                elif follower != "\n":
                    buf.add("\\" + follower, start, quoted=True)
                self.i += 2
            elif c == "$":
                self._dollar(buf, in_double=True)
            elif c == "`":
                self._backtick(buf)
            else:
                buf.add(c, start, quoted=True)
                self.i += 1
        raise ShellSyntaxError("unbalanced double quote")

    def _dollar(self, buf: _Buf, *, in_double: bool) -> None:
        src, start = self.src, self.i
        follower = src[start + 1 : start + 2]
        if src.startswith("$((", start):
            close = _matching(src, start + 1, "(", ")")
            if "$(" in src[start + 3 : close] or "`" in src[start + 3 : close]:
                raise ShellSyntaxError("command substitution inside arithmetic")
            self.i = close + 1
        elif follower == "(":
            self._substitution(start + 2)
        elif follower == "{":
            close = _matching(src, start + 1, "{", "}")
            if "$(" in src[start:close] or "`" in src[start:close] or "<(" in src[start:close]:
                raise ShellSyntaxError("command substitution inside ${...}")
            self.i = close + 1
        elif follower == "'" and not in_double:
            self._ansi_c(buf)
            return
        elif follower == '"' and not in_double:
            self.i += 1
            return
        elif follower and follower in _SPECIAL_PARAMS:
            self.i += 2
        elif follower and follower in _NAME_CHARS:
            end = start + 1
            while end < len(src) and src[end] in _NAME_CHARS:
                end += 1
            self.i = end
        else:
            buf.add("$", start, quoted=in_double)
            self.i += 1
            return
        buf.add(src[start : self.i], start, quoted=in_double, dynamic=True)

    def _substitution(self, inner_start: int) -> None:
        child = _Lexer(self.src, self.out, nested=True, start=inner_start)
        child.parse(closer=")")
        self.i = child.i

    def _backtick(self, buf: _Buf) -> None:
        src, start = self.src, self.i
        j = start + 1
        inner: list[str] = []
        while j < len(src) and src[j] != "`":
            if src[j] == "\\" and j + 1 < len(src) and src[j + 1] in "`\\$":
                inner.append(src[j + 1])
                j += 2
            else:
                inner.append(src[j])
                j += 1
        if j >= len(src):
            raise ShellSyntaxError("unbalanced backtick")
        _Lexer("".join(inner), self.out, nested=True).parse(closer=None)
        self.i = j + 1
        buf.add(src[start : self.i], start, dynamic=True)

    def _ansi_c(self, buf: _Buf) -> None:
        src, start = self.src, self.i
        j = start + 2
        value: list[str] = []
        while j < len(src) and src[j] != "'":
            if src[j] == "\\" and j + 1 < len(src):
                escaped = src[j + 1]
                value.append(_ANSI_C.get(escaped, escaped))
                j += 2
            else:
                value.append(src[j])
                j += 1
        if j >= len(src):
            raise ShellSyntaxError("unbalanced $'...' quote")
        self.i = j + 1
        buf.add("".join(value), start, quoted=True)


def _matching(src: str, open_at: int, opener: str, closer: str) -> int:
    depth = 0
    quote: str | None = None
    j = open_at
    while j < len(src):
        c = src[j]
        if quote:
            if c == "\\" and quote == '"':
                j += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "\\":
            j += 1
        elif c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ShellSyntaxError(f"unbalanced {opener!r}")
