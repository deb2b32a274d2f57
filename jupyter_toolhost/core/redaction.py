"""Secrets are replaced by a marker in every tool result, before the model, the cell or a
persisted file sees them.

What is redacted, in this order:

1. **Named values**: exact strings the session knows to be secret. The model client's key
   or token, the kernel's message-signing key (the Jupyter side passes it in), and the value
   of every environment variable whose name says it holds a credential
   (`credential_environment`). Each becomes ``[redacted: NAME]``. A cut-off piece of at
   least `FRAGMENT_CHARS` characters at the start or the end of such a value is redacted too:
   that is what a preview or a truncated line leaves of it.
2. **Token shapes**: formats that are secret wherever they appear (`SHAPES`): Anthropic,
   OpenAI, GitHub, GitLab, AWS access key ids, Slack, Google API keys, Stripe secret keys,
   Hugging Face, npm and PyPI tokens, JSON Web Tokens, private key PEM blocks, a password in
   a URL, an ``Authorization:`` header, and the value of a credential-named assignment
   (``API_KEY=...`` in a ``.env`` file or ``env`` output, ``"password": "..."`` in JSON).

Redaction catches a value as it is written. A value reversed, split or encoded (base64,
hex) is not recognised: the boundary against that is that the kernel's own credentials are
reachable only by code that asks first (PythonExec), not through a tool that runs unasked.

Cost: each shape is tried only where a literal it must contain occurs (a substring search),
so ordinary output costs a few scans of the text. Shapes need a boundary before them, so a
token-like run inside base64 (an inline image) is not matched by chance; image blocks and
image MIME types are never touched.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .types import ContentBlock, ToolResultContent

FRAGMENT_CHARS = 16
"""The shortest start or end of a named value that is redacted on its own."""
MIN_NAMED_CHARS = 8
"""Shorter values are never redacted by name: "test" or "1" would blank ordinary text."""

MODEL_CREDENTIAL_NAMES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "KERNEL_ANTHROPIC_API_KEY",
    "CLAUDE_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
"""Where the model client finds its credentials: always redacted by name."""

_CREDENTIAL_PARTS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PAT",
        "CREDENTIAL",
        "CREDENTIALS",
    }
)
"""A variable whose name has one of these as an ``_``-separated part holds a credential."""

_BOUNDARY = r"(?<![A-Za-z0-9_+/.-])"
"""No token character right before a shape: a run inside base64 or a longer word is not one."""
_END = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class Shape:
    """A token format, redacted where `pattern` matches: its group `group` (0: all of it;
    names: the first of those groups that matched).

    `pattern` is only tried where one of `literals` occurs (found by a substring search,
    in the lower-cased text when `folded`): at the literal itself, or, with `back`, at the
    start of the run of `back` characters that ends there (a variable's name before
    ``_TOKEN``, a URL's scheme before ``://``). `check`, when set, must accept the match.
    """

    label: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int | tuple[str, ...] = 0
    folded: bool = False
    back: frozenset[str] = frozenset()
    check: Callable[[re.Match[str]], bool] | None = None
    finder: re.Pattern[str] | None = None
    """Where to try `pattern`, when a literal is too common to try it at each one: the
    starts of this pattern's matches in the haystack (found in C, not one by one)."""


def _shape(
    label: str,
    literals: Iterable[str],
    pattern: str,
    *,
    group: int | tuple[str, ...] = 0,
    flags: int = 0,
    back: str = "",
    check: Callable[[re.Match[str]], bool] | None = None,
    finder: str | None = None,
) -> Shape:
    folded = bool(flags & re.IGNORECASE)
    compiled = re.compile(pattern, flags)
    found = re.compile(finder) if finder is not None else None
    return Shape(label, tuple(literals), compiled, group, folded, frozenset(back), check, found)


_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_QUOTED_NAME = re.compile(
    r"[A-Za-z0-9_.-]*?(?:api[_-]?key|apikey|secret[_-]?key|secret[_-]?access[_-]?key|"
    r"client[_-]?secret|secret|password|passwd|private[_-]?key|access[_-]?key|"
    r"signing[_-]?key|encryption[_-]?key|[a-z0-9]+[_-]token|auth[_-]?token|credentials?)",
    re.IGNORECASE,
)
"""Names whose quoted value is a credential (``"api_key": "..."``): not a bare ``token`` or
``key``, which data uses for other things (a tokenizer's tokens, a dict's keys)."""


def _is_assignment(found: re.Match[str]) -> bool:
    name = found.group("name")
    if found.group("quoted") is not None:
        return _QUOTED_NAME.fullmatch(name) is not None
    # NAME=value (a .env file, `env` output): at a line's start or after `export `/space.
    text, start = found.string, found.start()
    before = text[text.rfind("\n", 0, start) + 1 : start]
    return before.strip() in ("", "export") and is_credential_name(name.replace("-", "_"))


SHAPES: tuple[Shape, ...] = (
    _shape(
        "private key",
        ["-----BEGIN "],
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)",
    ),
    _shape("Anthropic key", ["sk-ant-"], _BOUNDARY + r"sk-ant-[A-Za-z0-9_-]{16,}"),
    _shape(
        "OpenAI key",
        ["sk-"],
        _BOUNDARY
        + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{16,}|[A-Za-z0-9]{32,}"
        + _END
        + ")",
    ),
    _shape(
        "GitHub token",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        _BOUNDARY + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    _shape("GitLab token", ["glpat-"], _BOUNDARY + r"glpat-[A-Za-z0-9_-]{20,}"),
    _shape(
        "AWS access key id",
        ["AKIA", "ASIA", "ABIA", "ACCA"],
        _BOUNDARY + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    _shape("Slack token", ["xox"], _BOUNDARY + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _shape(
        "Slack webhook",
        ["https://hooks.slack.com/"],
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+",
    ),
    _shape("Google API key", ["AIza"], _BOUNDARY + r"AIza[0-9A-Za-z_-]{35}" + _END),
    _shape(
        "Stripe key",
        ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        _BOUNDARY + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    _shape("Hugging Face token", ["hf_"], _BOUNDARY + r"hf_[A-Za-z0-9]{30,}"),
    _shape("npm token", ["npm_"], _BOUNDARY + r"npm_[A-Za-z0-9]{36}" + _END),
    _shape("PyPI token", ["pypi-AgE"], _BOUNDARY + r"pypi-AgE[A-Za-z0-9_-]{40,}"),
    _shape(
        "JSON Web Token",
        ["eyJ"],
        _BOUNDARY + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    _shape(
        "password in a URL",
        ["://"],
        r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\"<>]+:([^\s:/@'\"<>]{3,})@",
        group=1,
        back="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-",
    ),
    _shape(
        "authorization header",
        ["authorization", "api-key", "auth-token"],
        r"(?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token)[\"']?\s*[:=]\s*[\"']?"
        r"(?:(?:bearer|basic|token|bot)\s+)?([A-Za-z0-9._~+/=-]{8,})",
        group=1,
        flags=re.IGNORECASE,
        back="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-",
    ),
    _shape(
        "credential",
        ["key", "token", "secret", "pass", "credential"],
        r"(?P<name>[A-Za-z0-9_.-]+)(?:[\"']?[ \t]*[:=][ \t]*[\"'](?P<quoted>[^\"'\s]{8,})[\"']"
        r"|=(?P<plain>[^\s\"'#;&|]{8,}))",
        group=("quoted", "plain"),
        flags=re.IGNORECASE,
        back=_NAME_CHARS,
        check=_is_assignment,
        # A credential word right before `=` or `:` and a value of 8 or more characters:
        # "key" alone is in every other log line, this is in few.
        finder=r"(?:key|token|secret|pass|credential)[a-z0-9_.-]*[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"[^\s\"'#;&|]{8}",
    ),
)


def marker(label: str) -> str:
    """What a redacted value is replaced by."""
    return f"[redacted: {label}]"


def is_credential_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return name in MODEL_CREDENTIAL_NAMES or any(
        part in _CREDENTIAL_PARTS for part in name.upper().split("_")
    )


def _worth_redacting(value: str) -> bool:
    """Not too short to be a secret, and not a path or a plain number or flag."""
    stripped = value.strip()
    return (
        len(stripped) >= MIN_NAMED_CHARS
        and not stripped.startswith(("/", "~", "./"))
        and not stripped.isdigit()
        and stripped.lower() not in {"true", "false", "none", "null", "disabled", "enabled"}
    )


def _by_value(named: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(value, label) pairs worth redacting, longest value first (so that a value holding
    another is replaced whole)."""
    values: dict[str, str] = {}
    for label, value in named.items():
        value = value.strip()
        if _worth_redacting(value) and value not in values:
            values[value] = label
    return tuple(sorted(values.items(), key=lambda item: -len(item[0])))


def credential_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The credentials of an environment (default: this process's), by variable name."""
    env = os.environ if environ is None else environ
    return {
        name: value
        for name, value in env.items()
        if is_credential_name(name) and _worth_redacting(value)
    }


class Redactor:
    """Replaces named secret values and token shapes by markers (see the module docstring).

    `named` maps a label to a value. `live`, when given, is asked for more of them each time
    something is redacted (a key set after the session started, with ``%agent key`` or
    ``os.environ``, counts at once); asking it must be cheap. Safe to share between threads.
    """

    def __init__(
        self,
        named: Mapping[str, str] | None = None,
        *,
        shapes: bool = True,
        live: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self._fixed = dict(named or {})
        self._live = live
        self._shapes = SHAPES if shapes else ()
        self._seen: Mapping[str, str] | None = None
        self._named = _by_value(self._fixed)

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, *, named: Mapping[str, str] | None = None
    ) -> Redactor:
        """The credentials of `environ` (default: this process's, read at each use), plus
        `named`."""
        if environ is None:
            return cls(named, live=credential_environment)
        return cls({**credential_environment(environ), **(named or {})})

    def with_values(self, named: Mapping[str, str]) -> Redactor:
        """This redactor with more named values (a label for each)."""
        merged = {**self._fixed, **named}
        return Redactor(merged, shapes=bool(self._shapes), live=self._live)

    @property
    def labels(self) -> tuple[str, ...]:
        """The names of the values redacted by name (never the values)."""
        return tuple(sorted({label for _, label in self._current()}))

    def _current(self) -> tuple[tuple[str, str], ...]:
        """(value, label) pairs, longest value first: the fixed ones and the live ones."""
        if self._live is None:
            return self._named
        try:
            live = dict(self._live())
        except Exception:  # a source that fails leaves the fixed values
            return self._named
        if live != self._seen:
            self._named = _by_value({**live, **self._fixed})
            self._seen = live
        return self._named

    @property
    def _longest(self) -> int:
        return max((len(v) for v, _ in self._current()), default=0)

    # ── text ────────────────────────────────────────────────────────────────────────────

    def text(self, text: str) -> str:
        """`text` with every secret it holds replaced by its marker."""
        if not text:
            return text
        for value, label in self._current():
            text = _redact_value(text, value, label)
        folded: str | None = None
        for shape in self._shapes:
            if shape.folded:
                if folded is None:
                    folded = _ascii_lower(text)
                haystack = folded
            else:
                haystack = text
            spans = list(_matches(text, haystack, shape))
            if spans:
                text = _replace_spans(text, spans)
                folded = None
        return text

    def content(self, content: ToolResultContent) -> ToolResultContent:
        """A tool_result's content redacted: text blocks and text documents; images,
        tool references and other blocks are left as they are."""
        if isinstance(content, str):
            return self.text(content)
        return [self._block(block) for block in content]

    def _block(self, block: ContentBlock) -> ContentBlock:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            return {**block, "text": self.text(block["text"])}
        source = block.get("source")
        if kind == "document" and isinstance(source, Mapping):
            source = cast(Mapping[str, Any], source)
            data = source.get("data")
            if source.get("type") == "text" and isinstance(data, str):
                return {**block, "source": {**source, "data": self.text(data)}}
        return block

    def bundle(self, shown: Mapping[str, Any]) -> dict[str, Any]:
        """A display (``{"data": {mime: value}, "metadata": ...}``) redacted: every text in
        its data, except binary media (``image/*``, ``audio/*``, ``video/*``)."""
        data = shown.get("data")
        if not isinstance(data, Mapping):
            return dict(shown)
        redacted: dict[str, Any] = {}
        for mime, value in cast(Mapping[str, Any], data).items():
            binary = mime.split("/", 1)[0] in ("image", "audio", "video")
            redacted[mime] = value if binary else self.json(value)
        return {**shown, "data": redacted}

    def json(self, value: Any) -> Any:
        """Every string in a JSON-like value redacted (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            items = cast(Mapping[Any, Any], value).items()
            return {self.json(k): self.json(v) for k, v in items}
        if isinstance(value, list | tuple):
            return [self.json(v) for v in cast(Iterable[Any], value)]
        return value

    # ── files ──────────────────────────────────────────────────────────────────────────

    def file(self, path: Path, *, chunk_bytes: int = 1 << 20) -> bool:
        """Redact a file in place, reading it in chunks (its size does not matter).

        A first pass only looks; the file is rewritten (atomically, beside itself) only when
        it holds a secret. Returns whether it did. Bytes that are not UTF-8 are kept as they
        are."""
        if not any(
            self.text(piece) != piece for piece in _pieces(path, chunk_bytes, self._overlap)
        ):
            return False
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".redact-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as out:
                for piece in _pieces(path, chunk_bytes, self._overlap):
                    out.write(self.text(piece).encode("utf-8", errors="surrogateescape"))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return True

    @property
    def _overlap(self) -> int:
        return max(_OVERLAP_CHARS, 2 * self._longest)


_OVERLAP_CHARS = 64 * 1024
"""How far back from a chunk's end a piece may be cut: more than any secret is long."""


def _pieces(path: Path, chunk_bytes: int, overlap: int) -> Iterable[str]:
    """The file's text in pieces that no secret straddles: each ends at a line end (or,
    in a line over `overlap` characters, at a space), never inside an unfinished private
    key block."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    carry = ""
    with open(path, "rb") as handle:
        while True:
            data = handle.read(chunk_bytes)
            buffer = carry + decoder.decode(data, final=not data)
            if not data:
                if buffer:
                    yield buffer
                return
            cut = _safe_cut(buffer, overlap)
            if cut > 0:
                yield buffer[:cut]
            carry = buffer[cut:]


def _safe_cut(buffer: str, overlap: int) -> int:
    limit = len(buffer)
    cut = buffer.rfind("\n") + 1
    if limit - cut > overlap:  # a line longer than `overlap`: at its last space, else hard
        space = max(buffer.rfind(" "), buffer.rfind("\t")) + 1
        cut = space if space > cut and limit - space <= overlap else limit - overlap
    begin = buffer.rfind("-----BEGIN ", 0, cut)
    unfinished = begin >= 0 and buffer.find("-----END ", begin, cut) < 0
    if unfinished and "PRIVATE KEY" in buffer[begin : begin + 64] and cut - begin < overlap:
        cut = begin
    return cut


# ── the replacements ──────────────────────────────────────────────────────────────────────


def _redact_value(text: str, value: str, label: str) -> str:
    shown = marker(label)
    if value in text:
        text = text.replace(value, shown)
    if len(value) < 2 * FRAGMENT_CHARS:
        return text
    head, tail = value[:FRAGMENT_CHARS], value[-FRAGMENT_CHARS:]
    if head in text:
        text = _replace_runs(text, head, lambda at: _run_forward(text, at, value), shown)
    if tail in text:
        text = _replace_runs(text, tail, lambda at: _run_backward(text, at, value), shown)
    return text


def _run_forward(text: str, at: int, value: str) -> tuple[int, int]:
    """The span from `at` over which `text` follows `value` from its start."""
    end = at
    while end - at < len(value) and end < len(text) and text[end] == value[end - at]:
        end += 1
    return at, end


def _run_backward(text: str, at: int, value: str) -> tuple[int, int]:
    """The span ending at `at` + FRAGMENT_CHARS over which `text` matches `value`'s end."""
    end = at + FRAGMENT_CHARS
    start = end
    offset = len(value)
    while offset > 0 and start > 0 and text[start - 1] == value[offset - 1]:
        start -= 1
        offset -= 1
    return start, end


def _replace_runs(
    text: str, needle: str, span: Callable[[int], tuple[int, int]], shown: str
) -> str:
    parts: list[str] = []
    last = 0
    at = text.find(needle)
    while at >= 0:
        start, end = span(at)
        if start >= last:
            parts += [text[last:start], shown]
            last = end
        at = text.find(needle, max(end, at + 1))
    parts.append(text[last:])
    return "".join(parts)


def _matches(text: str, haystack: str, shape: Shape) -> Iterable[tuple[int, int, str]]:
    """The spans `shape` redacts in `text`, each with its marker."""
    shown = marker(shape.label)
    if not any(literal in haystack for literal in shape.literals):
        return
    for at in _candidates(haystack, shape):
        start = at
        if shape.back:
            while start > 0 and at - start < 128 and text[start - 1] in shape.back:
                start -= 1
        found = shape.pattern.match(text, start)
        if found is not None and (shape.check is None or shape.check(found)):
            begin, end = _span(found, shape.group)
            if begin >= 0 and not text.startswith("[redacted", begin):
                yield begin, end, shown


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    """`text` lower-cased in ASCII only, so that every position stays where it was
    (`str.lower` makes some characters longer: "İ" becomes two)."""
    folded = text.lower()
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


def _span(found: re.Match[str], group: int | tuple[str, ...]) -> tuple[int, int]:
    if isinstance(group, int):
        return found.span(group)
    return next((found.span(g) for g in group if found.group(g) is not None), (-1, -1))


def _candidates(haystack: str, shape: Shape) -> Iterable[int]:
    """Where `shape` may start: its finder's matches, or each of its literals."""
    if shape.finder is not None:
        yield from (found.start() for found in shape.finder.finditer(haystack))
        return
    for literal in shape.literals:
        at = haystack.find(literal)
        while at >= 0:
            yield at
            at = haystack.find(literal, at + 1)


def _replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    last = 0
    for begin, end, shown in sorted(set(spans)):
        if begin < last:
            continue
        parts += [text[last:begin], shown]
        last = end
    parts.append(text[last:])
    return "".join(parts)
