"""Reading one streamed model response into the orchestrator.

`ResponseReader` turns model events into loop events and hands each tool_use block to the
`StreamingToolExecutor` once the next event proves the block complete: a new block
starting, or the message ending with any stop reason but `max_tokens` (the last block of a
`max_tokens` response may be cut mid-input, so it is kept back and never runs). Safe calls
therefore start while the rest of the message still streams. `settle` collects every added
call's result after a failure, even when the waiting task is cancelled again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import cast

from .conversation import Block
from .events import EventSink, TextDelta, emit_to
from .model.base import (
    AssistantMessage,
    BlockComplete,
    BlockStart,
    MessageComplete,
    ModelEvent,
    StreamBroken,
    TextChunk,
)
from .orchestration.streaming import StreamingToolExecutor, interrupted_results
from .types import ToolCall, ToolResult


class ResponseReader:
    """Reads one response stream, handing each complete tool_use to the executor."""

    def __init__(self, executor: StreamingToolExecutor, sinks: list[EventSink]) -> None:
        self.executor = executor
        self.sinks = sinks
        self.blocks: list[Block] = []
        """The blocks completed so far (what survives a broken stream)."""
        self.pending: Block | None = None
        self.cut: Block | None = None
        """The tool_use a `max_tokens` stop may have cut (never handed to the executor)."""

    async def read(self, events: AsyncIterator[ModelEvent]) -> AssistantMessage:
        """Consume the stream; returns the complete message or raises `StreamBroken`."""
        async with contextlib.aclosing(cast(AsyncGenerator[ModelEvent, None], events)) as stream:
            async for event in stream:
                if (message := self._take(event)) is not None:
                    return message
        raise StreamBroken("the stream ended without a complete message", content=self.blocks)

    def _take(self, event: ModelEvent) -> AssistantMessage | None:
        match event:
            case BlockStart():
                self._flush()
            case TextChunk(text=text):
                emit_to(self.sinks, TextDelta(text))
            case BlockComplete(block=block):
                self._flush()
                self.blocks.append(block)
                if block.get("type") == "tool_use":
                    self.pending = block
            case MessageComplete(message=message):
                last = message.content[-1] if message.content else None
                if message.stop_reason == "max_tokens" and last and last.get("type") == "tool_use":
                    self.cut, self.pending = last, None
                self._flush()
                return message
        return None

    def _flush(self) -> None:
        block, self.pending = self.pending, None
        if block is not None:
            self.executor.add_tool(ToolCall(str(block["id"]), str(block["name"]), block["input"]))


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
