"""The seam between the loop and a model client: requests, stream events, errors, usage.

A `Model` turns one `ModelRequest` into an async stream of `ModelEvent`s: `MessageStarted`
(optional: the input side of the usage, known before any output), then `BlockStart`,
`TextChunk` (or `ThinkingChunk`), `BlockComplete` for each content block as it finishes,
then one `MessageComplete`. Content blocks are plain dicts in the Messages API's shape, with
their keys in one canonical order (`canonical_block`), so that a recorded run and its replay
produce byte-identical conversations. Nothing here imports a client library.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from ..core.errors import ToolhostError
from ..core.json_values import json_mapping
from .prompt_cache import (
    MAX_BREAKPOINTS,
    CachePolicy,
    count_breakpoints,
    message_breakpoints,
    with_breakpoints,
    with_lifetime,
    without_marks,
)

ContentBlock: TypeAlias = dict[str, Any]
Message: TypeAlias = dict[str, Any]

_KEY_ORDER = ("type", "id", "tool_use_id", "name", "text", "thinking", "signature", "input")


def canonical_block(block: Mapping[str, Any]) -> ContentBlock:
    """A content block with None values dropped and its keys in a fixed order."""
    present = {key: value for key, value in block.items() if value is not None}
    ordered = {key: present[key] for key in _KEY_ORDER if key in present}
    ordered.update({key: present[key] for key in sorted(present) if key not in ordered})
    return ordered


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one response, or a sum of several."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    thinking_tokens: int = 0
    """The part of `output_tokens` spent on extended thinking (the API's
    `usage.output_tokens_details.thinking_tokens`). Already counted in `output_tokens`,
    and billed as output: never add it to the output count again."""

    cache_creation_1h_input_tokens: int = 0
    """The part of `cache_creation_input_tokens` written with a 1-hour lifetime (the API's
    `usage.cache_creation.ephemeral_1h_input_tokens`), billed at 2 × the input price
    instead of 1.25 ×. Already counted in `cache_creation_input_tokens`."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.thinking_tokens + other.thinking_tokens,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    @property
    def context_tokens(self) -> int:
        """Everything the request put in the context window (what compaction watches)."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        """The counts; `thinking_tokens` only when non-zero (older cassettes stay as they are)."""
        data = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }
        if self.thinking_tokens:
            data["thinking_tokens"] = self.thinking_tokens
        if self.cache_creation_1h_input_tokens:
            data["cache_creation_1h_input_tokens"] = self.cache_creation_1h_input_tokens
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """Read the API's (or a cassette's) usage object; missing or null counts are 0.

        Thinking tokens come from `thinking_tokens` (a cassette) or the API's
        `output_tokens_details.thinking_tokens`; 1-hour writes from
        `cache_creation_1h_input_tokens` (a cassette) or the API's
        `cache_creation.ephemeral_1h_input_tokens`."""
        data = data or {}
        details = json_mapping(data.get("output_tokens_details"))
        thinking = data.get("thinking_tokens")
        if not thinking and details is not None:
            thinking = details.get("thinking_tokens")
        creation = json_mapping(data.get("cache_creation"))
        long = data.get("cache_creation_1h_input_tokens")
        if not long and creation is not None:
            long = creation.get("ephemeral_1h_input_tokens")
        return cls(
            _count(data.get("input_tokens")),
            _count(data.get("output_tokens")),
            _count(data.get("cache_creation_input_tokens")),
            _count(data.get("cache_read_input_tokens")),
            _count(thinking),
            _count(long),
        )


def _count(value: object) -> int:
    """A token count as the API or a cassette writes it: a number (null or missing is 0)."""
    if not value:
        return 0
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"a token count must be a number, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One Messages API request, as the loop builds it."""

    model: str
    messages: Sequence[Message]
    max_tokens: int
    system: Sequence[ContentBlock] = ()
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: Mapping[str, Any] | None = None
    cwd: str | None = None
    """Not sent: the session's working directory, so wrappers (cassettes) can normalise it."""
    thinking: Mapping[str, Any] | None = None
    """The API's `thinking` object, sent as it is when set."""
    context_management: Mapping[str, Any] | None = None
    """The API's `context_management` object (a beta: the model client adds its header)."""
    cache_messages: bool = False
    """Put prompt-cache breakpoints in the conversation as it is sent (see
    `prompt_cache.message_breakpoints`); `messages` themselves stay unmarked."""

    cache_policy: CachePolicy = "5m"
    """Which breakpoints live an hour (`prompt_cache.CachePolicy`); the tools' and system's
    marks get theirs here too."""
    cell_boundaries: tuple[int, ...] = ()
    """The last message before each of the latest cells (oldest first): where the
    ``"cell"`` policy puts its 1-hour marks (other policies do not mark them)."""

    def message_breakpoints(self) -> tuple[int, ...]:
        """The indexes of the messages sent with a breakpoint on their last cacheable block,
        within what the system's breakpoints leave of the API's limit of 4 (the tools'
        mark gives its slot up: the system's mark caches the tools too)."""
        if not self.cache_messages:
            return ()
        used = count_breakpoints(self.system) or count_breakpoints(self.tools)
        boundaries = self.cell_boundaries if self.cache_policy == "cell" else ()
        return message_breakpoints(
            self.messages, budget=MAX_BREAKPOINTS - used, boundaries=boundaries
        )

    def to_api(self) -> dict[str, Any]:
        """The request body's fields (without `stream`), breakpoints marked."""
        marks = self.message_breakpoints()
        boundary = self.cell_boundaries[-1] if self.cell_boundaries else None
        long = self.cache_policy != "5m"
        tools = with_lifetime(self.tools, long)
        if count_breakpoints(self.system) + count_breakpoints(tools) + len(marks) > MAX_BREAKPOINTS:
            tools = without_marks(tools)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": with_breakpoints(
                self.messages, marks, policy=self.cache_policy, boundary=boundary
            ),
        }
        if self.system:
            body["system"] = with_lifetime(self.system, long)
        if self.tools:
            body["tools"] = tools
        if self.tool_choice is not None:
            body["tool_choice"] = dict(self.tool_choice)
        if self.thinking is not None:
            body["thinking"] = dict(self.thinking)
        if self.context_management is not None:
            body["context_management"] = dict(self.context_management)
        return body


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A complete response: its content blocks, why it stopped, and what it cost."""

    content: list[ContentBlock]
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)
    model: str = ""


@dataclass(frozen=True, slots=True)
class MessageStarted:
    """The response began (the API's `message_start`). `usage` is what the request is billed
    for already: its input, cache reads and writes (output so far, if any, included). A stream
    that is interrupted or breaks later is still billed this much, so the loop counts it."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class BlockStart:
    """A content block began (`type` is the API's block type)."""

    index: int
    type: str


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of a text block, as it streams."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingChunk:
    """A piece of a thinking block's text, as it streams (the API's `thinking_delta`)."""

    index: int
    thinking: str


CUTTING_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})
"""Stop reasons that end the output wherever the tokens ran out: the last block may be cut."""


@dataclass(frozen=True, slots=True)
class BlockComplete:
    """A content block finished streaming. A tool_use block's input may still be cut short:
    the last block of a response with one of the `CUTTING_STOPS` ends where the tokens ran
    out."""

    index: int
    block: ContentBlock
    input_complete: bool = False
    """A tool_use block's input is proven whole: the raw `input_json_delta` text parsed
    strictly (no partial parser) as a complete JSON object equal to `block["input"]`, so no
    `max_tokens` stop can have cut it. False when unknown (no input text streamed, or
    another producer that cannot tell); the reader then waits for the next event."""


@dataclass(frozen=True, slots=True)
class MessageComplete:
    """The last event of a successful stream."""

    message: AssistantMessage


ModelEvent: TypeAlias = (
    MessageStarted | BlockStart | TextChunk | ThinkingChunk | BlockComplete | MessageComplete
)


class ModelError(ToolhostError):
    """A model request failed; the message says what to do about it."""


class ModelAPIError(ModelError):
    """The API answered with an error status (after the client's own retries)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelUnreachable(ModelError):
    """No response began: the connection failed or timed out before the API answered, after
    the client's own retries. Nothing more is tried: the loop retries only a response that
    started and broke."""


class StreamBroken(ModelError):
    """The response stopped before the message was complete (a dropped connection, a cut
    stream, an error event mid-stream). `content` holds the blocks that did complete."""

    def __init__(self, reason: str, *, content: Sequence[ContentBlock] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.content = list(content)


class Model(Protocol):
    """Anything that can stream one Messages API response per request."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the response's events; raise `StreamBroken` or `ModelAPIError` on failure."""
        ...
