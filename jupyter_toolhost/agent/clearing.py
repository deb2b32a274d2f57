"""Old tool results stop costing: each is replaced by a short note naming its saved copy.

Every request sends the whole conversation again; the prompt cache makes the old part cost
0.1 × its tokens a request, which over a long session is most of the bill (docs/caching.md).
A tool result several turns old is rarely needed again, so the loop clears it: its content
becomes a note that says it was cleared, how long it was, and the file that holds it whole
(`ResultStore`: a result over the budget was saved when it came; a smaller one is saved
now). The model can Read that file when it needs the text again.

Clearing changes the conversation from the first cleared block on, so the request after it
writes all that follows again (1.25 × instead of 0.1 ×). It is done only when it pays for
itself within `PAYBACK_REQUESTS` further requests: when the tokens it removes, read
0.1 × on each of those requests, outweigh the extra 1.15 × on what stays after the first
cleared block. The `KEEP` most recent results are never cleared, nor a result that is not
plain text (an image), nor one shorter than its note would be. A cleared result is edited
in the stored conversation (`messages[i] = ...`), so every later request sends the same
note and the cache keeps hitting; thinking blocks and tool_use blocks are never touched, so
it holds with thinking on, and after compaction it works on the new conversation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableSequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.json_values import json_array, json_mapping
from ..core.results import ResultStore

KEEP = 3
"""The most recent tool results, never cleared (the model is working with them)."""
PAYBACK_REQUESTS = 5
"""Clear only when the saving pays the rewrite back within this many further requests."""
MIN_CHARS = 1_000
"""A result shorter than this is not worth its note and the rewrite."""
CLEARED_PREFIX = "[Old tool result cleared"


@dataclass(frozen=True, slots=True)
class Cleared:
    """One clearing: which results, how many characters they held."""

    tool_use_ids: tuple[str, ...]
    chars: int


def _text(content: object) -> str | None:
    """A result's content as text, or None when it holds anything but text blocks."""
    if isinstance(content, str):
        return content
    blocks = json_array(content)
    if blocks is None:
        return None
    parts: list[str] = []
    for item in blocks:
        block = json_mapping(item)
        if block is None or block.get("type") != "text":
            return None
        parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _size(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    return len(content) if isinstance(content, str) else len(repr(content))


def note(chars: int, path: str) -> str:
    """What the model reads instead of a cleared result."""
    return (
        f"{CLEARED_PREFIX} from the context to save tokens ({chars:,} characters). The full "
        f"text is saved in {path}; Read it if you need it again.]"
    )


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


def clear_old_results(
    messages: MutableSequence[dict[str, Any]],
    store: ResultStore,
    cwd: Path,
) -> Cleared | None:
    """Clear old tool results in `messages` when that pays for itself (see the module
    docstring); what was cleared, or None. A result that cannot be saved stays."""
    spots: list[tuple[int, int, str, str]] = []  # message, block, id, text
    for number, message in enumerate(messages):
        content = json_array(message.get("content"))
        if message.get("role") != "user" or content is None:
            continue
        for index, item in enumerate(content):
            block = json_mapping(item)
            if block is not None and block.get("type") == "tool_result":
                text = _text(block.get("content"))
                spots.append((number, index, str(block.get("tool_use_id")), text or ""))
                if text is None or text.startswith(CLEARED_PREFIX):
                    spots[-1] = (number, index, "", "")
    candidates = [s for s in spots[: max(0, len(spots) - KEEP)] if s[2] and len(s[3]) >= MIN_CHARS]
    if not candidates:
        return None
    first = candidates[0][0]
    removed = sum(len(text) - 200 for *_, text in candidates)
    after = sum(_size(m) for m in messages[first:]) - removed
    if 0.1 * removed * PAYBACK_REQUESTS < 1.15 * after:
        return None
    replaced: dict[int, dict[int, str]] = {}
    done: list[str] = []
    chars = 0
    for number, index, tool_use_id, text in candidates:
        saved = store.saved_for(tool_use_id, text)
        if saved is None:
            try:
                saved, _ = store.persist(tool_use_id, text)
            except OSError:
                continue
        replaced.setdefault(number, {})[index] = note(len(text), _shown_path(saved, cwd))
        done.append(tool_use_id)
        chars += len(text)
    for number, notes in replaced.items():
        content = list(messages[number]["content"])
        for index, text in notes.items():
            content[index] = {**content[index], "content": text}
        messages[number] = {**messages[number], "content": content}
    return Cleared(tuple(done), chars) if done else None
