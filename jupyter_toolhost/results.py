"""The three-layer result budget of seed section 3.6, and persistence of big results.

1. Each tool declares `max_result_size_chars`; the threshold used is
   ``min(declared, 50_000)`` and ``float("inf")`` opts out (Read has its own cap).
2. A result over its threshold is written whole to
   ``.toolhost/sessions/<session>/tool-results/<tool_use_id>.txt`` and the model gets a
   ``<persisted-output>`` block with the size, the path and a 2,000-byte preview.
3. All results of one assistant turn share 200,000 characters: when they exceed it, the
   largest ones are persisted first until the rest fits.

A result persisted once keeps exactly the same replacement text for the rest of the session,
so requests stay byte-identical and the prompt cache keeps hitting.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from .types import ToolResult, ToolResultContent

DEFAULT_RESULT_CAP = 50_000
MESSAGE_BUDGET_CHARS = 200_000
PREVIEW_BYTES = 2_000


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


def persisted_message(path: Path, text: str) -> str:
    """The `<persisted-output>` block the model sees instead of a large result."""
    size = len(text.encode("utf-8"))
    head, cut = preview(text)
    return (
        "<persisted-output>\n"
        f"Output too large ({human_size(size)}). Full output saved to: {path}\n\n"
        f"Preview (first {PREVIEW_BYTES // 1000}KB):\n"
        f"{head}{'...' if cut else ''}\n"
        "</persisted-output>"
    )


class ResultStore:
    """Persists large results of one session and remembers every replacement it made."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._replacements: dict[str, str] = {}
        self._lock = threading.Lock()

    def replacement_for(self, tool_use_id: str) -> str | None:
        """The text that stands for a result persisted earlier, if it was."""
        return self._replacements.get(tool_use_id)

    def persist(self, tool_use_id: str, text: str) -> tuple[Path, str]:
        """Write `text` for `tool_use_id` (once) and return (path, replacement text)."""
        with self._lock:
            path = self.directory / f"{_safe_name(tool_use_id)}.txt"
            known = self._replacements.get(tool_use_id)
            if known is not None:
                return path, known
            _write_once(path, text)
            replacement = persisted_message(path, text)
            self._replacements[tool_use_id] = replacement
            return path, replacement

    def apply_threshold(self, result: ToolResult, threshold: float) -> ToolResult:
        """Layers 1 and 2: persist one result if it is over its tool's threshold."""
        known = self.replacement_for(result.tool_use_id)
        if known is not None:
            return self._replaced(result, known)
        size = content_size(result.content)
        if size <= threshold:
            return result
        text = text_of(result.content)
        if text is None:
            return result
        path, replacement = self.persist(result.tool_use_id, text)
        result.content = replacement
        result.persisted_path = str(path)
        result.original_size = size
        return result

    def apply_message_budget(
        self, results: Sequence[ToolResult], budget: int = MESSAGE_BUDGET_CHARS
    ) -> None:
        """Layer 3: persist the largest results of one turn until the rest fits `budget`."""
        total = sum(content_size(r.content) for r in results)
        if total <= budget:
            return
        candidates = [r for r in results if r.persisted_path is None and not r.is_error]
        candidates.sort(key=lambda r: content_size(r.content), reverse=True)
        for result in candidates:
            if total <= budget:
                break
            text = text_of(result.content)
            if text is None:
                continue
            before = content_size(result.content)
            path, replacement = self.persist(result.tool_use_id, text)
            result.content = replacement
            result.persisted_path = str(path)
            result.original_size = before
            total += len(replacement) - before

    def _replaced(self, result: ToolResult, replacement: str) -> ToolResult:
        result.original_size = content_size(result.content)
        result.content = replacement
        result.persisted_path = str(self.directory / f"{_safe_name(result.tool_use_id)}.txt")
        return result


def _safe_name(tool_use_id: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_" else "_" for c in tool_use_id)
    return cleaned or "result"


def _write_once(path: Path, text: str) -> None:
    """Write atomically, never replacing an existing file (a reader sees all or nothing)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
