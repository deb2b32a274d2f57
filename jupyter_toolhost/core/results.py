"""The three-layer result budget, and persistence of big results.

A tool result goes into every later request of the conversation, so one huge result would
fill the context window and be paid for on every turn; the model gets a preview and a path
it can Read instead.

1. Each tool declares `max_result_size_chars`; the threshold used is
   ``min(declared, 50_000)`` and ``float("inf")`` opts out (Read has its own cap).
2. A result over its threshold is written whole to
   ``.toolhost/sessions/<session>/tool-results/<tool_use_id>.txt`` and the model gets a
   ``<persisted-output>`` block with the size, the path and a 2,000-byte preview.
3. All results of one assistant turn share 200,000 characters: when they exceed it, the
   largest ones are persisted first until the rest fits.

Error results count like any other. A file never replaces, nor is taken for, another one
with different content (`<tool_use_id>-2.txt` then). A result that cannot be saved (disk
full, an unwritable folder) becomes an error result with the preview; nothing raises.

A result persisted once keeps exactly the same replacement text for the rest of the session,
so requests stay byte-identical and the prompt cache keeps hitting.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from .private import private_folder
from .types import ToolResult, ToolResultContent

DEFAULT_RESULT_CAP = 50_000
MESSAGE_BUDGET_CHARS = 200_000
PREVIEW_BYTES = 2_000

_log = logging.getLogger(__name__)


def effective_threshold(declared: float) -> float:
    """The per-result threshold: the declared size capped at 50,000; inf means never."""
    if declared == float("inf"):
        return declared
    return min(declared, DEFAULT_RESULT_CAP)


def content_size(content: ToolResultContent) -> int:
    """Characters of text in a result (images and other blocks count as zero)."""
    if isinstance(content, str):
        return len(content)
    return sum(len(block.get("text", "")) for block in content if block.get("type") == "text")


def text_of(content: ToolResultContent) -> str | None:
    """The result as one text, or None when it holds non-text blocks (those stay inline)."""
    if isinstance(content, str):
        return content
    if all(block.get("type") == "text" for block in content):
        return "\n".join(block.get("text", "") for block in content)
    return None


def preview(text: str, limit_bytes: int = PREVIEW_BYTES) -> tuple[str, bool]:
    """The first `limit_bytes` of `text` in UTF-8, never splitting a character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit_bytes:
        return text, False
    return encoded[:limit_bytes].decode("utf-8", errors="ignore"), True


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def persisted_reference(path: Path | str, size_bytes: int, head: str, cut: bool) -> str:
    """The `<persisted-output>` block for output saved at `path` (`head` is its preview)."""
    return (
        "<persisted-output>\n"
        f"Output too large ({human_size(size_bytes)}). Full output saved to: {path}\n\n"
        f"Preview (first {PREVIEW_BYTES // 1000}KB):\n"
        f"{head}{'...' if cut else ''}\n"
        "</persisted-output>"
    )


def persisted_message(path: Path, text: str) -> str:
    """The `<persisted-output>` block the model sees instead of a large result."""
    head, cut = preview(text)
    return persisted_reference(path, len(text.encode("utf-8")), head, cut)


def unsaved_message(directory: Path, text: str, exc: BaseException) -> str:
    """The error the model sees when a large result could not be saved."""
    head, cut = preview(text)
    return (
        "<tool_use_error>"
        f"The output ({human_size(len(text.encode('utf-8')))}) was over the result budget "
        f"and could not be saved to {directory}: {describe_error(exc)}. Only its start is "
        "shown here; the full text is kept in memory for this session only.\n\n"
        f"Preview (first {PREVIEW_BYTES // 1000}KB):\n"
        f"{head}{'...' if cut else ''}"
        "</tool_use_error>"
    )


@dataclass(frozen=True, slots=True)
class _Replacement:
    text: str
    """What the model sees instead of the result."""
    path: Path | None
    """Where the result was saved; None when saving failed."""
    digest: str
    """The SHA-256 of the result's text (a repeated id with other text is another result)."""


class ResultStore:
    """Persists large results of one session and remembers every replacement it made.

    Saving never raises out of `apply_threshold` or `apply_message_budget`: a result that
    cannot be written (disk full, an unwritable folder) becomes an error result with a
    preview, and its full text stays in `unsaved`.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.unsaved: dict[str, str] = {}
        """Full texts that could not be saved, by tool_use_id."""
        self._replacements: dict[str, _Replacement] = {}
        self._lock = threading.Lock()

    def replacement_for(self, tool_use_id: str) -> str | None:
        """The text that stands for the result of `tool_use_id` persisted last, if any."""
        known = self._replacements.get(tool_use_id)
        return known.text if known else None

    def saved_for(self, tool_use_id: str, shown: str) -> Path | None:
        """Where the result of `tool_use_id` was saved when `shown` is the replacement the
        model got for it (so the file holds the whole result, not `shown`); else None."""
        known = self._replacements.get(tool_use_id)
        return known.path if known is not None and known.text == shown else None

    def persist(self, tool_use_id: str, text: str) -> tuple[Path, str]:
        """Write `text` for `tool_use_id` (once) and return (path, replacement text).

        The file gets a name of its own: an existing file of that name with other content
        is never replaced nor pointed at (nor is an earlier result of a repeated id).
        Raises `OSError` when it cannot be written."""
        digest = _digest(text)
        with self._lock:
            known = self._replacements.get(tool_use_id)
            if known is not None and known.path is not None and known.digest == digest:
                return known.path, known.text
            path = _write_unique(self.directory, safe_name(tool_use_id), text)
            replacement = persisted_message(path, text)
            self._replacements[tool_use_id] = _Replacement(replacement, path, digest)
            return path, replacement

    def apply_threshold(self, result: ToolResult, threshold: float) -> ToolResult:
        """Layers 1 and 2: persist one result if it is over its tool's threshold."""
        if self._is_replaced(result):
            return result
        text = text_of(result.content)
        known = self._replacements.get(result.tool_use_id)
        if known is not None and text is not None and known.digest == _digest(text):
            return self._replaced(result, known)
        if content_size(result.content) <= threshold or text is None:
            return result
        self._save(result, text)
        return result

    def apply_message_budget(
        self, results: Sequence[ToolResult], budget: int = MESSAGE_BUDGET_CHARS
    ) -> None:
        """Layer 3: persist the largest results of one turn until the rest fits `budget`."""
        total = sum(content_size(r.content) for r in results)
        if total <= budget:
            return
        candidates = [r for r in results if not self._is_replaced(r)]
        candidates.sort(key=lambda r: content_size(r.content), reverse=True)
        for result in candidates:
            if total <= budget:
                break
            text = text_of(result.content)
            if text is None:
                continue
            before = content_size(result.content)
            self._save(result, text)
            total += content_size(result.content) - before

    def _is_replaced(self, result: ToolResult) -> bool:
        known = self._replacements.get(result.tool_use_id)
        return known is not None and result.content == known.text

    def _save(self, result: ToolResult, text: str) -> None:
        size = content_size(result.content)
        try:
            path, replacement = self.persist(result.tool_use_id, text)
        except OSError as exc:
            _log.warning("could not save the result of %s: %s", result.tool_use_id, exc)
            replacement = unsaved_message(self.directory, text, exc)
            with self._lock:
                known = _Replacement(replacement, None, _digest(text))
                self._replacements[result.tool_use_id] = known
                self.unsaved[result.tool_use_id] = text
            result.content = replacement
            result.is_error = True
            result.original_size = size
            return
        result.content = replacement
        result.persisted_path = str(path)
        result.original_size = size

    def _replaced(self, result: ToolResult, known: _Replacement) -> ToolResult:
        result.original_size = content_size(result.content)
        result.content = known.text
        if known.path is None:
            result.is_error = True
        else:
            result.persisted_path = str(known.path)
        return result


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def safe_name(text: str, fallback: str = "result") -> str:
    """`text` as a file name stem: letters, digits, `-` and `_` kept, the rest `_`."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text) or fallback


def describe_error(exc: BaseException) -> str:
    """An exception as `Type: message` (the first of a group), for people and the model."""
    first = _first_in_group(exc)
    if first is not None:
        return describe_error(first)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first_in_group(exc: BaseException) -> BaseException | None:
    if not isinstance(exc, BaseExceptionGroup):
        return None
    group = cast("BaseExceptionGroup[BaseException]", exc)
    return group.exceptions[0] if group.exceptions else None


_MAX_NAME_TRIES = 1000


def _write_unique(directory: Path, stem: str, text: str) -> Path:
    """Write `text` atomically to `<stem>.txt`, or `<stem>-2.txt`, ... when a file of that
    name holds something else (a reader sees all or nothing; nothing is overwritten)."""
    private_folder(directory)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        for n in range(1, _MAX_NAME_TRIES + 1):
            path = directory / (f"{stem}.txt" if n == 1 else f"{stem}-{n}.txt")
            try:
                os.link(tmp, path)
                return path
            except FileExistsError:
                if _holds(path, text):
                    return path
        raise FileExistsError(f"{_MAX_NAME_TRIES} files named {stem}*.txt hold other content")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False
