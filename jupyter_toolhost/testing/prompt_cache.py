"""The loopback server's prompt cache: it bills a request's input as the Messages API does.

The prompt is the request's tools (those without ``defer_loading``), then its system
blocks, then every message's content blocks, in that order; each is one *segment*, and a
segment with ``cache_control`` is a breakpoint. A segment's tokens are its canonical JSON's
bytes / 4 (the server's synthetic count; a `tool_reference` adds the definition it loads).

For each request, `PromptCache.bill`:
- looks, at each breakpoint and up to `LOOKBACK_BLOCKS` segments before it, for a prefix
  an earlier request wrote that has not expired; the longest found is **read**
  (`cache_read_input_tokens`) and its lifetime starts again;
- **writes** the prefix at each breakpoint past the read one that reaches the model's
  minimum (`min_cacheable_tokens`); `cache_creation_input_tokens` is the last written
  prefix less what was read. As the API bills mixed lifetimes: with A the tokens read, B
  the prefix at the last 1-hour breakpoint written (A when none) and C the last written
  prefix, B − A are 1-hour writes (2 × the input price) and C − B 5-minute writes
  (1.25 ×), reported apart in ``cache_creation`` (`ephemeral_1h_input_tokens`,
  `ephemeral_5m_input_tokens`);
- bills the rest as `input_tokens`, so the three add up to the request's whole input.

An entry lives 5 minutes from its last write or read (``"ttl": "1h"``: an hour), on the
server's `clock`, which a test may replace (`MessagesServer(clock=...)`) to script a pause
without waiting. A read refreshes the entry for its own lifetime: a 1-hour entry read
through a 5-minute breakpoint (or found looking back) keeps its hour. The prefix also
depends on the model (caches are per model). `breakpoint_problem` refuses what the API
refuses: more than 4 breakpoints, a lifetime other than ``5m`` or ``1h``, a 1-hour
breakpoint after a 5-minute one, or one on a thinking block (an empty text block is
refused whether marked or not).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_toolhost.model.prompt_cache import (
    LOOKBACK_BLOCKS,
    MAX_BREAKPOINTS,
    UNCACHEABLE_BLOCKS,
    min_cacheable_tokens,
)

__all__ = ["CacheBill", "PromptCache", "breakpoint_problem", "without_cache_marks"]

TTL_S = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, slots=True)
class CacheBill:
    """How one request's input tokens split."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation_1h_input_tokens: int = 0
    """The part of `cache_creation_input_tokens` written with a 1-hour lifetime."""


@dataclass(frozen=True, slots=True)
class _Segment:
    where: str
    """`tools.3`, `system.0`, `messages.2.content.1`: where the block sits in the body."""
    block: Mapping[str, Any]
    data: bytes
    marked: bool


def _canonical(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate is another check's 400


def without_cache_marks(value: Any) -> Any:
    """`value` (a body, a message, a block) with every `cache_control` key dropped: what a
    test compares when it asks what was sent, not where the breakpoints were."""
    if isinstance(value, Mapping):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(v) for v in value]
    return value


def _unmarked(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        if value.get("type") == "tool_reference" and isinstance(value.get("tool_name"), str):
            yield value["tool_name"]
        for inner in value.values():
            yield from _references(inner)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _segments(body: Mapping[str, Any]) -> list[_Segment]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
    deferred = {t.get("name"): t for t in tools if t.get("defer_loading") is True}
    found: list[_Segment] = []

    def add(where: str, block: Any, extra: bytes = b"") -> None:
        if isinstance(block, Mapping):
            data = _canonical(_unmarked(block)) + extra
            found.append(_Segment(where, block, data, "cache_control" in block))

    for index, tool in enumerate(tools):
        if tool.get("defer_loading") is not True:
            add(f"tools.{index}", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system.0", {"type": "text", "text": system})
    elif isinstance(system, list):
        for index, block in enumerate(system):
            add(f"system.{index}", block)
    for number, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        role = str(message.get("role")).encode()  # the same block said by another role
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        # A message's own framing ({"role":...,"content":[...]} and the commas) goes with
        # its first block, so a cached message is cached whole.
        frame = _canonical({"role": message.get("role"), "content": []})
        for index, block in enumerate(content if isinstance(content, list) else []):
            loaded = b"".join(
                _canonical(_unmarked(deferred[name]))
                for name in _references(block)
                if name in deferred
            )
            framing = frame if index == 0 else b","
            add(f"messages.{number}.content.{index}", block, role + loaded + framing)
    return found


def breakpoint_problem(body: Mapping[str, Any]) -> str | None:
    """The API's 400 message for a request's misplaced or surplus breakpoints, or None."""
    segments = _segments(body)
    for segment in segments:
        if not segment.marked:
            continue
        kind = segment.block.get("type")
        if kind in UNCACHEABLE_BLOCKS:
            return f"{segment.where}.{kind}.cache_control: Extra inputs are not permitted"
    marked = [segment for segment in segments if segment.marked]
    short = None
    for segment in marked:
        control = segment.block.get("cache_control")
        ttl = control.get("ttl", "5m") if isinstance(control, Mapping) else "5m"
        if ttl not in TTL_S:
            return f"{segment.where}.cache_control.ttl: Input should be '5m' or '1h'"
        if ttl == "5m" and short is None:
            short = segment.where
        if ttl == "1h" and short is not None:
            return (
                "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control "
                f"block (found {segment.where} after {short})"
            )
    marks = len(marked)
    if marks > MAX_BREAKPOINTS:
        return (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {marks}."
        )
    return None


def _ttl(block: Mapping[str, Any]) -> float:
    control = block.get("cache_control")
    ttl = control.get("ttl") if isinstance(control, Mapping) else None
    return TTL_S.get(str(ttl), TTL_S["5m"])


def _long(segment: _Segment) -> bool:
    return segment.marked and _ttl(segment.block) == TTL_S["1h"]


class PromptCache:
    """The cached prefixes of one server, by hash, with the time each one expires."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._expires: dict[bytes, tuple[float, float]] = {}
        """Prefix hash -> (when it expires, its lifetime in seconds)."""
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._expires.clear()

    def bill(self, body: Mapping[str, Any], total_tokens: int) -> CacheBill:
        """Split `total_tokens` (the request's whole input) into uncached, written and
        read tokens, and update the cache as the request would."""
        segments = _segments(body)
        digest = hashlib.sha256(str(body.get("model")).encode())
        hashes: list[bytes] = []
        tokens: list[int] = []
        size = 0
        for segment in segments:
            digest.update(len(segment.data).to_bytes(8, "big") + segment.data)
            hashes.append(digest.copy().digest())
            size += len(segment.data)
            tokens.append(size // 4)
        marks = [i for i, segment in enumerate(segments) if segment.marked]
        minimum = min_cacheable_tokens(str(body.get("model")))
        with self._lock:
            now = self.clock()
            for key in [k for k, (until, _) in self._expires.items() if until <= now]:
                del self._expires[key]
            read_at = -1
            for mark in marks:
                for spot in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                    if hashes[spot] in self._expires:
                        read_at = max(read_at, spot)
                        break
            if read_at >= 0:
                lifetime = self._expires[hashes[read_at]][1]
                if segments[read_at].marked:
                    lifetime = max(lifetime, _ttl(segments[read_at].block))
                self._expires[hashes[read_at]] = (now + lifetime, lifetime)
            written_at = long_at = read_at
            for mark in marks:
                if mark > read_at and tokens[mark] >= minimum:
                    lifetime = _ttl(segments[mark].block)
                    self._expires[hashes[mark]] = (now + lifetime, lifetime)
                    written_at = mark
                    if _long(segments[mark]):
                        long_at = mark
        read = tokens[read_at] if read_at >= 0 else 0
        written = tokens[written_at] - read if written_at > read_at else 0
        long = tokens[long_at] - read if long_at > read_at else 0
        read, written = min(read, total_tokens), min(written, max(0, total_tokens - read))
        return CacheBill(total_tokens - read - written, written, read, min(long, written))
