"""Wire shapes of the loopback Messages API server's answers.

Owns the JSON the real API sends back: the Message object, the error body
(`{"type": "error", "error": {...}, "request_id": ...}`), and the Server-Sent Events
that stream one message (`message_start`, `content_block_start`, `ping`,
`content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`), with the
pauses and cuts a script asks for. A thinking block streams as the API's does: an empty
start, `thinking_delta`s (none when the text is omitted), one `signature_delta`; a
redacted_thinking block comes whole in its start. It produces `Step`s; writing them to a
socket is the server's job.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ERROR_MESSAGES",
    "Cut",
    "Hold",
    "Pause",
    "Step",
    "encode_event",
    "error_body",
    "error_type",
    "message_object",
    "split_evenly",
    "stream_steps",
]

_JSON_PARTS = 3
_TEXT_PARTS = 3

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {
    429: "This request would exceed the rate limit for your organization",
    500: "Internal server error",
    529: "Overloaded",
}


def error_type(status: int) -> str:
    """The real API's `error.type` for an HTTP status."""
    return _ERROR_TYPES.get(status, "api_error")


def error_body(
    kind: str, message: str, request_id: str, error_code: str | None = None
) -> dict[str, Any]:
    """The real API's error JSON; `error_code` goes to `error.details.error_code`."""
    error: dict[str, Any] = {"type": kind, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error, "request_id": request_id}


def message_object(
    message_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, Any],
) -> dict[str, Any]:
    """A complete Message object as the non-streaming endpoint returns it."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
            **usage,
        },
    }


@dataclass(frozen=True)
class Pause:
    """Sleep this many seconds before the next step."""

    seconds: float


@dataclass(frozen=True)
class Cut:
    """Stop mid-message: drop the connection, or (`clean`) end the HTTP body properly."""

    clean: bool = False


@dataclass(frozen=True, eq=False)
class Hold:
    """Wait before the next step until `until` is set (a test sets it when a tool started),
    for at most `timeout` seconds. `released` records each wait: True when `until` was set
    in time, False when the wait timed out."""

    until: threading.Event = field(default_factory=threading.Event)
    timeout: float = 5.0
    released: list[bool] = field(default_factory=list[bool])

    def wait(self) -> None:
        self.released.append(self.until.wait(self.timeout))


Step = bytes | Pause | Cut | Hold


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE frame: `event: NAME\\ndata: JSON\\n\\n`."""
    payload = json.dumps(data, separators=(",", ":"))
    return f"event: {name}\ndata: {payload}\n\n".encode()


def split_evenly(value: str, parts: int) -> list[str]:
    """Split `value` into at most `parts` non-empty, roughly equal, consecutive pieces."""
    if not value:
        return []
    size = -(-len(value) // max(1, parts))
    return [value[start : start + size] for start in range(0, len(value), size)]


def stream_steps(
    message: dict[str, Any],
    *,
    block_delay: float = 0.0,
    cut_after_blocks: int | None = None,
    cut_mid_block: int | None = None,
    clean_cut: bool = False,
    cut_input: int | None = None,
    holds: Mapping[int, Hold] | None = None,
) -> Iterator[Step]:
    """Events for `message` (a complete Message object), with pauses and cuts.

    `block_delay` pauses between content blocks; `cut_after_blocks=N` cuts once N blocks
    are complete (before `message_delta` if N covers them all); `cut_mid_block=i` cuts
    half-way through the deltas of content block `i`. The cut is `Cut(clean=clean_cut)`.
    A negative `cut_after_blocks` cuts before `message_start`: with `clean_cut`, an empty
    200 event stream. `cut_input=i` sends only the first half of tool_use block `i`'s input
    JSON and then ends the block (`content_block_stop`), as a `max_tokens` stop does
    mid-input. `holds[i]` waits right after block `i`'s `content_block_stop`.
    """
    cut = Cut(clean_cut)
    if cut_after_blocks is not None and cut_after_blocks < 0:
        yield cut
        return
    yield encode_event("message_start", {"type": "message_start", "message": _start(message)})
    for index, block in enumerate(message["content"]):
        if cut_after_blocks is not None and index >= cut_after_blocks:
            yield cut
            return
        if index and block_delay > 0:
            yield Pause(block_delay)
        if index == cut_mid_block:
            yield from _block_steps(index, block, cut=cut)
            return
        yield from _block_steps(index, block, cut=None, cut_input=index == cut_input)
        if holds and index in holds:
            yield holds[index]
    if cut_after_blocks is not None:
        yield cut
        return
    yield encode_event("message_delta", _message_delta(message))
    yield encode_event("message_stop", {"type": "message_stop"})


def _start(message: dict[str, Any]) -> dict[str, Any]:
    usage = {**message["usage"], "output_tokens": 1}
    usage.pop("output_tokens_details", None)  # known once the message is done
    return {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}


def _message_delta(message: dict[str, Any]) -> dict[str, Any]:
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    if "output_tokens_details" in message["usage"]:
        usage["output_tokens_details"] = message["usage"]["output_tokens_details"]
    return {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": usage,
    }


def _block_steps(
    index: int, block: dict[str, Any], *, cut: Cut | None, cut_input: bool = False
) -> Iterator[Step]:
    yield encode_event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": _empty(block)},
    )
    if index == 0:
        yield encode_event("ping", {"type": "ping"})
    deltas = _deltas(block, cut_input=cut_input)
    if cut is not None:
        yield from (_delta_event(index, delta) for delta in deltas[: max(1, len(deltas) // 2)])
        yield cut
        return
    yield from (_delta_event(index, delta) for delta in deltas)
    yield encode_event("content_block_stop", {"type": "content_block_stop", "index": index})


def _empty(block: dict[str, Any]) -> dict[str, Any]:
    """The block as `content_block_start` carries it: tool inputs and text come in deltas;
    a server tool's result block comes whole, as the API sends it."""
    if block["type"] in ("tool_use", "server_tool_use"):
        return {**block, "input": {}}
    if block["type"] == "text":
        return {**block, "text": ""}
    if block["type"] == "thinking":
        return {**block, "thinking": "", "signature": ""}
    return block


def _deltas(block: dict[str, Any], *, cut_input: bool = False) -> list[dict[str, Any]]:
    if block["type"] == "thinking":
        pieces = split_evenly(block["thinking"], _TEXT_PARTS)
        thought = [{"type": "thinking_delta", "thinking": piece} for piece in pieces]
        return [*thought, {"type": "signature_delta", "signature": block["signature"]}]
    if block["type"] not in ("tool_use", "server_tool_use", "text"):
        return []
    if block["type"] in ("tool_use", "server_tool_use"):
        encoded = json.dumps(block["input"], separators=(",", ":"))
        if cut_input:
            encoded = encoded[: len(encoded) // 2]
        pieces = ["", *split_evenly(encoded, _JSON_PARTS)]
        return [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    pieces = split_evenly(block["text"], _TEXT_PARTS)
    return [{"type": "text_delta", "text": piece} for piece in pieces]


def _delta_event(index: int, delta: dict[str, Any]) -> bytes:
    return encode_event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )
