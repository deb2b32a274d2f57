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

**Lifetimes (the cache policy).** An entry lives 5 minutes from its last write or read, or
an hour with ``"ttl": "1h"``, whose writes cost 2 × instead of 1.25 ×; in one request the
1-hour breakpoints must come before the 5-minute ones. A notebook user pauses between cells
(reads a plot, edits code), so after each pause a conversation cached for 5 minutes is
written again whole. `CachePolicy` says which breakpoints live an hour:

- ``"auto"`` (the default): ``"5m"`` until the session has seen a pause longer than 5
  minutes since its previous request (`PAUSE_S`, on the loop's clock), ``"cell"`` from
  that request on. A session without pauses pays no 1-hour premium; a user who pauses
  once is likely to pause again, and from then on each pause costs a read, not a rewrite.
- ``"cell"``: the tools, the system prompt and the end of the conversation
  before the running cell (the *cell boundary*, `cell_boundary`) live an hour; the marks
  that move every turn live 5 minutes. After a pause the next cell reads everything up to
  the previous cell's boundary and writes the previous cell again; in a cell without
  pauses the tail's writes stay at 1.25 ×, and the boundary's 1-hour write is only the
  previous cell's last answer. When the previous cell was longer than the API's look-back
  (`LOOKBACK_BLOCKS`), the boundary before it is marked too, so that read still lands.
- ``"5m"``: every mark 5 minutes (as Claude Code 2.1.328 does);
- ``"1h"``: every mark an hour.

docs/caching.md has the measurements these were chosen from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from ..core.json_values import json_array, json_mapping

CachePolicy: TypeAlias = Literal["auto", "cell", "5m", "1h"]
"""Which breakpoints live an hour (see the module docstring)."""
CACHE_POLICIES: tuple[CachePolicy, ...] = ("auto", "cell", "5m", "1h")
DEFAULT_CACHE_POLICY: CachePolicy = "auto"
PAUSE_S = 300.0
"""A 5-minute entry's lifetime: a longer gap between two requests loses it."""
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}
ONE_HOUR: Mapping[str, str] = {"type": "ephemeral", "ttl": "1h"}
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


def cacheable(block: object) -> bool:
    """Whether `block` may carry `cache_control`."""
    found = json_mapping(block)
    if found is None:
        return False
    kind = found.get("type")
    if kind in UNCACHEABLE_BLOCKS:
        return False
    return not (kind == "text" and not found.get("text"))


def count_breakpoints(blocks: Sequence[Any]) -> int:
    """How many of `blocks` (tool definitions or system blocks) carry `cache_control`."""
    return sum(1 for block in blocks if isinstance(block, Mapping) and "cache_control" in block)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(json_array(content) or [])


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


def _blocks_after(messages: Sequence[Mapping[str, Any]], start: int, end: int) -> int | None:
    """How many blocks lie after the last cacheable block of `messages[start]`, up to the
    end of `messages[end]` (None when `start` has no cacheable block)."""
    spot = _last_cacheable(messages[start])
    if spot is None:
        return None
    after = len(_blocks(messages[start])) - 1 - spot
    return after + sum(len(_blocks(messages[i])) for i in range(start + 1, end + 1))


def _cacheable_at_or_before(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    while index >= 0 and _last_cacheable(messages[index]) is None:
        index -= 1
    return index


def message_breakpoints(
    messages: Sequence[Mapping[str, Any]],
    *,
    budget: int,
    boundaries: Sequence[int] = (),
) -> tuple[int, ...]:
    """The indexes of the messages whose last cacheable block gets a breakpoint, in order.

    By priority, within `budget`: the last message with a cacheable block; when more than
    `LOOKBACK_BLOCKS` blocks lie after the previous request's last message, that message
    (unless a boundary mark is as late); the last of `boundaries` (the cell boundary: the
    last message before the running cell); and the one before it when more than
    `LOOKBACK_BLOCKS` blocks separate the two. Only the last few messages and the
    boundaries are looked at, so this costs the same in a long session."""
    if budget <= 0 or not messages:
        return ()
    last = _cacheable_at_or_before(messages, len(messages) - 1)
    if last < 0:
        return ()
    marks = [last]
    cells = [_cacheable_at_or_before(messages, b) for b in boundaries if 0 <= b < len(messages)]
    cell = cells[-1] if cells else -1
    previous = _previous_end(messages)
    if previous is not None and cell < previous < last:
        after = _blocks_after(messages, previous, last)
        if after is not None and after > LOOKBACK_BLOCKS:
            marks.append(previous)
    if 0 <= cell < last:
        marks.append(cell)
        before = cells[-2] if len(cells) >= 2 else -1
        if 0 <= before < cell and (_blocks_after(messages, before, cell) or 0) > LOOKBACK_BLOCKS:
            marks.append(before)
    return tuple(sorted(marks[:budget]))


def cache_control(long: bool) -> dict[str, str]:
    """A breakpoint's `cache_control`: an hour when `long`, else the default 5 minutes."""
    return dict(ONE_HOUR if long else EPHEMERAL)


def long_lived(policy: CachePolicy, index: int, boundary: int | None) -> bool:
    """Whether the mark on message `index` lives an hour under `policy` (`boundary`: the
    cell boundary; marks up to it are the stable prefix)."""
    if policy == "1h":
        return True
    return policy == "cell" and boundary is not None and index <= boundary


def marked(message: Mapping[str, Any], *, long: bool = False) -> dict[str, Any]:
    """A copy of `message` whose last cacheable block carries `cache_control` (the
    message itself is not changed: a message is a value)."""
    blocks = _blocks(message)
    spot = _last_cacheable(message)
    if spot is None:
        return dict(message)
    blocks[spot] = {**blocks[spot], "cache_control": cache_control(long)}
    return {**message, "content": blocks}


def with_breakpoints(
    messages: Sequence[Mapping[str, Any]],
    marks: Sequence[int],
    *,
    policy: CachePolicy = "5m",
    boundary: int | None = None,
) -> list[Mapping[str, Any]]:
    """`messages` as a new list with the messages at `marks` replaced by marked copies,
    each with the lifetime `policy` gives it (`long_lived`)."""
    sent = list(messages)
    for index in marks:
        sent[index] = marked(sent[index], long=long_lived(policy, index, boundary))
    return sent


def with_lifetime(blocks: Sequence[Any], long: bool) -> list[Any]:
    """Tool definitions or system blocks with each existing mark set to the lifetime."""
    return [
        {**block, "cache_control": cache_control(long)}
        if isinstance(block, Mapping) and "cache_control" in block
        else block
        for block in blocks
    ]


def without_marks(blocks: Sequence[Any]) -> list[Any]:
    """Tool definitions or system blocks with no mark (a slot given to the messages)."""
    return [_unmarked(block) for block in blocks]


def _unmarked(block: object) -> object:
    found = json_mapping(block)
    if found is None:
        return block
    return {k: v for k, v in found.items() if k != "cache_control"}
