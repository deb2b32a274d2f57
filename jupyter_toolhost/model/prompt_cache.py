"""The Messages API's prompt-cache rules, and where a request's conversation breakpoints go.

The API caches a request's prefix (tools, then system, then messages) up to a block marked
with ``cache_control``. A later request that sends the same prefix reads it from the cache
at a tenth of the input price; writing it costs 1.25 times (5-minute lifetime, refreshed on
each read). The rules a client must keep, which the SDK's types do not express:

- at most `MAX_BREAKPOINTS` (4) blocks carry ``cache_control`` in one request, counting
  tools, system and messages; a fifth is a 400 error;
- thinking and redacted_thinking blocks may not carry it, nor an empty text block;
- a prefix shorter than the model's minimum (`min_cacheable_tokens`) is not cached, silently;
- on a miss at a breakpoint the API looks back at most `LOOKBACK_BLOCKS` blocks for an
  earlier cached prefix.

So, as Claude Code does, each request marks the last cacheable block of its last message: it
reads the whole earlier conversation (written by the previous request's mark) and writes
only what is new. When more than `LOOKBACK_BLOCKS` blocks were added since the previous
request's last message (a turn with many parallel calls), that message is marked too, so
the read still lands. The marks are made on the wire only (`ModelRequest.to_api`): the
stored conversation never holds them, so cassettes, transcripts and the history's
incremental encoding see the same messages whichever request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
"""How many blocks before a breakpoint the API checks for an earlier cached prefix."""
UNCACHEABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})
"""Block types that may not carry `cache_control`."""

_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
"""Sonnet 4.5, Sonnet 4, Sonnet 3.7, Opus 4.1 and Opus 4 (and any model not listed)."""


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix `model` caches (published per model; shorter ones are billed
    as plain input, without an error)."""
    for prefix, minimum in _MINIMUMS:
        if model.startswith(prefix):
            return minimum
    return DEFAULT_MIN_CACHEABLE_TOKENS


def cacheable(block: Any) -> bool:
    """Whether `block` may carry `cache_control`."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if kind in UNCACHEABLE_BLOCKS:
        return False
    return not (kind == "text" and not block.get("text"))


def count_breakpoints(blocks: Sequence[Any]) -> int:
    """How many of `blocks` (tool definitions or system blocks) carry `cache_control`."""
    return sum(1 for block in blocks if isinstance(block, Mapping) and "cache_control" in block)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _last_cacheable(message: Mapping[str, Any]) -> int | None:
    blocks = _blocks(message)
    return next((i for i in range(len(blocks) - 1, -1, -1) if cacheable(blocks[i])), None)


def _previous_end(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the message the previous request of a loop ended on: the last user
    message before the last assistant message (None when there is none)."""
    index = len(messages) - 1
    while index >= 0 and messages[index].get("role") != "assistant":
        index -= 1
    while index >= 0 and messages[index].get("role") != "user":
        index -= 1
    return index if index >= 0 else None


def message_breakpoints(messages: Sequence[Mapping[str, Any]], *, budget: int) -> tuple[int, ...]:
    """The indexes of the messages whose last cacheable block gets a breakpoint.

    The last message with a cacheable block, and, when more than `LOOKBACK_BLOCKS` blocks
    lie after the previous request's last message, that message too (if `budget` allows).
    Only the last few messages are looked at, so this costs the same in a long session."""
    if budget <= 0 or not messages:
        return ()
    last = len(messages) - 1
    while last >= 0 and _last_cacheable(messages[last]) is None:
        last -= 1
    if last < 0:
        return ()
    marks = [last]
    previous = _previous_end(messages)
    if budget >= 2 and previous is not None and previous < last:
        spot = _last_cacheable(messages[previous])
        if spot is not None:
            after = len(_blocks(messages[previous])) - 1 - spot
            after += sum(len(_blocks(messages[i])) for i in range(previous + 1, last + 1))
            if after > LOOKBACK_BLOCKS:
                marks.insert(0, previous)
    return tuple(marks)


def marked(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `message` whose last cacheable block carries `cache_control` (the
    message itself is not changed: a message is a value)."""
    blocks = _blocks(message)
    spot = _last_cacheable(message)
    if spot is None:
        return dict(message)
    blocks[spot] = {**blocks[spot], "cache_control": dict(EPHEMERAL)}
    return {**message, "content": blocks}


def with_breakpoints(
    messages: Sequence[Mapping[str, Any]], marks: Sequence[int]
) -> list[Mapping[str, Any]]:
    """`messages` as a new list with the messages at `marks` replaced by marked copies."""
    sent = list(messages)
    for index in marks:
        sent[index] = marked(sent[index])
    return sent
