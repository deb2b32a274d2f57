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

Cost: each shape (`token_shapes`) is tried only where a literal it must contain occurs, so
ordinary output costs a few scans of the text. Image blocks and image MIME types are never
touched.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from .token_shapes import MODEL_CREDENTIAL_NAMES as MODEL_CREDENTIAL_NAMES
from .token_shapes import SHAPES, ascii_lower, is_credential_name, marker, matches, replace_spans
from .token_shapes import Shape as Shape
from .types import ContentBlock, ToolResultContent

FRAGMENT_CHARS = 16
"""The shortest start or end of a named value that is redacted on its own."""
MIN_NAMED_CHARS = 8
"""Shorter values are never redacted by name: "test" or "1" would blank ordinary text."""


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
                    folded = ascii_lower(text)
                haystack = folded
            else:
                haystack = text
            spans = list(matches(text, haystack, shape))
            if spans:
                text = replace_spans(text, spans)
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
