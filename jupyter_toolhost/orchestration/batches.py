"""Batching the tool calls of one message, and running them all, as Claude Code does.

Consecutive concurrency-safe calls form one batch that runs concurrently (at most
`max_tool_use_concurrency()` at once); every unsafe call is a batch of its own and runs
alone, after the previous batch has finished. `[Read, Bash(ls), Edit, Read]` gives
`[Read, Bash] → [Edit] → [Read]`. Why: a call that only reads cannot change what another
sees, so reads run side by side; a call that changes something runs alone, so no other call
sees it half done, and changes land in the order the model wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.context import ToolUseContext
from ..core.tool import Tool
from ..core.types import ToolCall, ToolResult
from .events import EventSink, ToolEvent
from .executor import max_tool_use_concurrency, plan_call
from .pipeline import Pipeline
from .streaming import StreamingToolExecutor

__all__ = ["Batch", "max_tool_use_concurrency", "partition_tool_calls", "run_tools"]


@dataclass(frozen=True, slots=True)
class Batch:
    """Calls that run together (concurrency-safe) or one call that runs alone."""

    calls: tuple[ToolCall, ...]
    concurrency_safe: bool


def partition_tool_calls(calls: Sequence[ToolCall], tools: Sequence[Tool[Any]]) -> list[Batch]:
    """Group calls into batches: runs of safe calls together, each unsafe call alone."""
    batches: list[Batch] = []
    for call in calls:
        safe = plan_call(call, tools).concurrency_safe
        if safe and batches and batches[-1].concurrency_safe:
            batches[-1] = Batch((*batches[-1].calls, call), True)
        else:
            batches.append(Batch((call,), safe))
    return batches


async def run_tools(
    calls: Sequence[ToolCall],
    *,
    pipeline: Pipeline,
    context: ToolUseContext,
    on_event: EventSink[ToolEvent] | None = None,
) -> list[ToolResult]:
    """Run a whole message's calls batch by batch; one result per call, in call order.

    The calls go through a `StreamingToolExecutor` all at once, which runs exactly the
    batches `partition_tool_calls` gives, one after another, with the same sibling abort
    and interrupt handling. On a kernel interrupt the `CancelledError` is re-raised with
    every call's result attached (`interrupted_results(exc)`).
    """
    executor = StreamingToolExecutor(pipeline=pipeline, context=context, on_event=on_event)
    for call in calls:
        executor.add_tool(call)
    return await executor.results()
