"""Reading one streamed model response into the orchestrator.

`ResponseReader` turns model events into loop events and hands each tool_use block to the
`StreamingToolExecutor` as soon as its input is known to be whole:
- at the block's own end (`BlockComplete`) when the model proved the input whole (its raw
  JSON text parsed strictly as a complete object, `BlockComplete.input_complete`) and the
  pipeline would accept it (an enabled tool of the pool by that name, an input its model
  validates) — what a hand-written loop on the raw client does at `content_block_stop`;
- otherwise once the next event proves it: a new block starting, or the message ending
  with any stop reason but `max_tokens` (or `model_context_window_exceeded`: both stop
  wherever the tokens ran out, `CUTTING_STOPS`). The last block of such a response may be
  cut mid-input, so a tool_use still held back then is cut and never runs; one already
  handed over had a whole input and keeps its real result.

An unknown tool or an input that fails validation is never started early, so it waits as
before and gets the pipeline's one error result (or, cut by `max_tokens`, the cut answer).
Safe calls therefore start while the rest of the message still streams. `settle` collects
every added call's result after a failure, even when the waiting task is cancelled again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, assert_never, cast

from pydantic import BaseModel

from ..core.conversation import Block
from ..core.tool import Tool
from ..core.types import ToolCall, ToolResult
from ..model.base import (
    CUTTING_STOPS,
    AssistantMessage,
    BlockComplete,
    BlockStart,
    MessageComplete,
    MessageStarted,
    ModelEvent,
    StreamBroken,
    TextChunk,
    ThinkingChunk,
    Usage,
)
from ..model.thinking import THINKING_BLOCKS
from ..orchestration.pipeline import find_tool, parse_input
from ..orchestration.streaming import StreamingToolExecutor, interrupted_results
from .events import EventSink, LoopEvent, TextDelta, ThinkingDelta, ThinkingStarted, emit


class ResponseReader:
    """Reads one response stream, handing each complete tool_use to the executor."""

    def __init__(self, executor: StreamingToolExecutor, sinks: list[EventSink[LoopEvent]]) -> None:
        self.executor = executor
        self.sinks = sinks
        self.blocks: list[Block] = []
        """The blocks completed so far (what survives a broken stream)."""
        self.pending: Block | None = None
        """The last complete tool_use, held back until an event proves its input whole."""
        self.handed: set[str] = set()
        """The ids of the tool_use blocks handed to the executor."""
        self.started: Usage | None = None
        """The usage `MessageStarted` reported: what the request is billed for even when the
        stream ends before its message is complete."""
        self.cut: Block | None = None
        """The tool_use a `max_tokens` (or context window) stop may have cut (never handed
        to the executor)."""

    async def read(self, events: AsyncIterator[ModelEvent]) -> AssistantMessage:
        """Consume the stream; returns the complete message or raises `StreamBroken`."""
        async with contextlib.aclosing(cast(AsyncGenerator[ModelEvent, None], events)) as stream:
            async for event in stream:
                if (message := self._take(event)) is not None:
                    return message
        raise StreamBroken("the stream ended without a complete message", content=self.blocks)

    def _take(self, event: ModelEvent) -> AssistantMessage | None:
        match event:
            case MessageStarted(usage=usage):
                self.started = usage
            case BlockStart(type=kind):
                self._flush()
                if kind in THINKING_BLOCKS:
                    emit(self.sinks, ThinkingStarted(redacted=kind == "redacted_thinking"))
            case TextChunk(text=text):
                emit(self.sinks, TextDelta(text))
            case ThinkingChunk(thinking=thinking):
                emit(self.sinks, ThinkingDelta(thinking))
            case BlockComplete(block=block, input_complete=whole):
                self._flush()
                self.blocks.append(block)
                if block.get("type") == "tool_use":
                    self.pending = block
                    if whole and (parsed := accepted(block, self.executor.tools)) is not None:
                        self._flush(parsed)
            case MessageComplete(message=message):
                if message.stop_reason in CUTTING_STOPS:  # what is still held back never runs
                    held = self.pending if self.pending is not None else self._unhanded(message)
                    self.cut, self.pending = held, None
                self._flush()
                return message
            case _:
                assert_never(event)
        return None

    def _unhanded(self, message: AssistantMessage) -> Block | None:
        """The message's last block when it is a tool_use never handed over (a producer that
        sent no `BlockComplete` for it)."""
        last = message.content[-1] if message.content else None
        if last is None or last.get("type") != "tool_use" or str(last.get("id")) in self.handed:
            return None
        return last

    def _flush(self, parsed: BaseModel | None = None) -> None:
        block, self.pending = self.pending, None
        if block is not None:
            self.handed.add(str(block["id"]))
            call = ToolCall(str(block["id"]), str(block["name"]), block["input"])
            self.executor.add_tool(call, parsed=parsed)


def accepted(block: Block, tools: Sequence[Tool[Any]]) -> BaseModel | None:
    """The input of this tool_use as the pipeline would take it (None when it would not): it
    names an enabled tool of `tools` and its input validates against that tool's model. The
    parsed input goes with the call, so that it is validated once."""
    tool = find_tool(str(block.get("name")), tools)
    if tool is None:
        return None
    try:
        return parse_input(tool, block.get("input"))
    except Exception:  # a validator that raises anything at all: not proven, so wait
        return None


async def settle(executor: StreamingToolExecutor) -> list[ToolResult]:
    """Every added call's result, even when this task is cancelled while waiting (the
    cancellation is then requested again, so it still reaches whoever awaits the task)."""
    try:
        return await executor.results()
    except asyncio.CancelledError as exc:
        results = interrupted_results(exc) or executor.completed_results()
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
            task.cancel()
        return results


def max_tokens_notice(cut: bool) -> str:
    """What the user is told when a response stopped at max_tokens (`cut`: a call was lost)."""
    text = "The response reached max_tokens and stopped early."
    if cut:
        text += " Its last tool call was cut off and was not run."
    return text
