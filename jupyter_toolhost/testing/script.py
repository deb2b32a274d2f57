"""The script a loopback Messages API server follows: one `Turn` per answer.

`text(...)`, `tool_use(...)` and `raw(...)` make the content blocks of a turn
(`thinking(...)` and `redacted_thinking(...)` come from `thinking.py`); a `Script` is a
list of turns or a function that picks the turn for a request. `messages_server` answers
with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_toolhost.testing.sse import Hold
from jupyter_toolhost.testing.thinking import RedactedThinkingBlock, ThinkingBlock


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    name: str
    input: dict[str, Any]
    id: str | None = None  # None: the server assigns toolu_01, toolu_02, ...


@dataclass(frozen=True)
class RawBlock:
    """Any other content block, sent as given: a server tool's `server_tool_use` or its
    result block (`tool_search_tool_result`, ...)."""

    block: dict[str, Any]


ContentBlock = TextBlock | ToolUseBlock | RawBlock | ThinkingBlock | RedactedThinkingBlock


def text(value: str) -> TextBlock:
    """A text content block."""
    return TextBlock(value)


def raw(block: dict[str, Any]) -> RawBlock:
    """A content block sent exactly as given (server tools' blocks)."""
    return RawBlock(block)


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> ToolUseBlock:
    """A tool_use content block; without `id` the server numbers it `toolu_01`, `toolu_02`..."""
    return ToolUseBlock(name, input, id)


@dataclass
class Turn:
    """What the server answers to one `POST /v1/messages`.

    `stop_reason` defaults to `tool_use` when any block is a tool_use, else `end_turn`;
    `output_tokens` defaults to a quarter of the content's JSON length. Streaming only:
    `block_delay` sleeps between content blocks, `cut_after_blocks=N` sends N complete
    blocks then drops the connection (no `message_delta`/`message_stop`), `cut_mid_block`
    drops it half-way through the first tool_use's `input_json_delta`s; with `clean_cut`
    the HTTP body is ended properly at the cut point instead (a stream that just stops).
    A non-streaming request to a cut turn gets its connection dropped before any response.
    A `max_tokens` (or `model_context_window_exceeded`) turn whose last block is a tool_use
    streams that block's input JSON cut half-way and then ends the block
    (`content_block_stop`, then `message_delta`), as the API does when the tokens run out
    mid-input; `cut_input=False` streams it whole (the limit fell exactly at its end),
    `cut_input=True` cuts it under any stop reason.
    `holds={i: Hold(...)}` waits right after block `i`'s `content_block_stop` until the
    hold's event is set or its timeout passes (a test sets it when a tool has started).

    `status` turns this into an injected error answer (429, 529, 500, ...) with the real
    API's error body; it is consumed like any turn, so a client retry gets the next one.
    The answer's usage splits the input as the API does (see `prompt_cache`): what the
    request's breakpoints read from the server's prompt cache, what they wrote, and the
    rest. `cache_read_input_tokens` / `cache_creation_input_tokens`, when either is set,
    are reported as given instead (the whole input then stays `input_tokens`), and the
    cache is left as it was.
    `thinking(...)` / `redacted_thinking(...)` blocks (from `testing.thinking`) are signed
    by the server and stream as the API's do; the usage reports their synthetic count as
    `output_tokens_details.thinking_tokens` (`thinking_tokens` overrides it), included in
    `output_tokens`. A thinking block in a turn answering a request without thinking on is
    a script error.
    `retry_after` (seconds) is sent as `retry-after: <whole seconds>` plus
    `retry-after-ms`: anthropic 2.16 ignores `retry-after: 0` and falls back to its own
    backoff (0.375-0.5 s for the first retry), while a positive `retry-after-ms` is
    obeyed, which keeps retries fast.
    `None` omits both headers.
    """

    content: list[ContentBlock] = field(default_factory=list)
    stop_reason: str | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    block_delay: float = 0.0
    delay_before: float = 0.0
    status: int | None = None
    error_message: str | None = None
    retry_after: float | None = 0.01
    cut_after_blocks: int | None = None
    cut_mid_block: bool = False
    clean_cut: bool = False
    thinking_tokens: int | None = None
    cut_input: bool | None = None
    holds: dict[int, Hold] = field(default_factory=dict[int, Hold])

    def __post_init__(self) -> None:
        if self.cut_mid_block and self.first_tool_use() is None:
            raise ValueError("cut_mid_block needs a tool_use block to cut")
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error status, got {self.status}")

    def first_tool_use(self) -> int | None:
        """Index of the first tool_use block, if any."""
        return next(
            (i for i, block in enumerate(self.content) if isinstance(block, ToolUseBlock)), None
        )

    @property
    def is_cut(self) -> bool:
        return self.cut_after_blocks is not None or self.cut_mid_block

    def cut_input_block(self) -> int | None:
        """The index of the tool_use whose input streams cut half-way (see `cut_input`)."""
        last = len(self.content) - 1
        if last < 0 or not isinstance(self.content[last], ToolUseBlock):
            return None
        cuts = self.stop_reason in ("max_tokens", "model_context_window_exceeded")
        cut = cuts if self.cut_input is None else self.cut_input
        return last if cut else None


Script = Sequence[Turn] | Callable[[dict[str, Any]], Turn]
