"""What the orchestrator knows about one call: its flags, its context, its outcome.

It classifies a tool_use before it runs (concurrency-safe? cancelled or left to finish on an
interrupt? does its failure cancel its siblings?), builds the context the call runs with
(its own abort signal, its progress callback), names the status of a finished result, and
writes the results of calls the orchestrator stopped or never started. Flags come from the
tool and its parsed input, never from its name; anything that cannot be decided fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from ..core.context import AbortSignal, Progress, ToolUseContext
from ..core.error_results import error_content
from ..core.tool import Tool
from ..core.types import InterruptBehavior, PermissionAllow, ToolCall, ToolResult
from .concurrency import CONCURRENCY_ENV as CONCURRENCY_ENV
from .concurrency import DEFAULT_MAX_CONCURRENCY as DEFAULT_MAX_CONCURRENCY
from .concurrency import max_tool_use_concurrency as max_tool_use_concurrency
from .events import CallStatus
from .pipeline import ParsedInput, find_tool, parsed_or_error


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How the orchestrator must treat one call, decided before it runs."""

    call: ToolCall
    tool: Tool[Any] | None
    concurrency_safe: bool
    interrupt_behavior: InterruptBehavior
    cancels_siblings_on_error: bool
    parsed: ParsedInput = None
    """The call's input, validated once here and handed to the pipeline with the call."""

    @property
    def tool_name(self) -> str:
        return self.tool.name if self.tool is not None else self.call.name


def plan_call(
    call: ToolCall, tools: Sequence[Tool[Any]], *, parsed: BaseModel | None = None
) -> CallPlan:
    """Classify a call: unknown tools and unparsable input are unsafe (they fail fast).

    `parsed` is the call's input when the caller has validated it already.
    """
    tool = find_tool(call.name, tools)
    if tool is None:
        return CallPlan(call, None, False, "cancel", False)
    checked = parsed if parsed is not None else _parsed_if_possible(tool, call.input)
    return CallPlan(
        call=call,
        tool=tool,
        concurrency_safe=is_concurrency_safe(checked, tool),
        interrupt_behavior=_interrupt_behavior(tool),
        cancels_siblings_on_error=tool.cancels_siblings_on_error,
        parsed=checked,
    )


def is_concurrency_safe(parsed: ParsedInput, tool: Tool[Any]) -> bool:
    """The tool's verdict on this parsed input; bad input or a raising predicate is unsafe."""
    if not isinstance(parsed, BaseModel):
        return False
    return tool.flag(tool.is_concurrency_safe, parsed)


def _parsed_if_possible(tool: Tool[Any], raw: Any) -> ParsedInput:
    try:
        return parsed_or_error(tool, raw)
    except Exception:  # a validator that raises anything else: the pipeline reports it
        return None


def _interrupt_behavior(tool: Tool[Any]) -> InterruptBehavior:
    try:
        behavior = tool.interrupt_behavior()
    except Exception:
        return "block"
    return "cancel" if behavior == "cancel" else "block"


def call_context(
    context: ToolUseContext,
    call: ToolCall,
    *,
    abort: AbortSignal,
    progress: Callable[[str | Progress], None],
    on_child_event: Callable[[Any], None] | None = None,
) -> ToolUseContext:
    """The context one call runs with: shared state, its own abort signal, its progress
    callback and the sink for the events of the subagents it starts."""
    return replace(
        context,
        tool_use_id=call.id,
        abort=abort,
        progress=progress,
        on_child_event=on_child_event,
    )


def status_of(result: ToolResult, *, aborted: bool) -> CallStatus:
    """What a pipeline result means: ok, a failure, a denial, or a cancellation."""
    if not result.is_error:
        return "ok"
    if aborted:
        return "cancelled"
    decision = result.decision
    if decision is not None and not isinstance(decision, PermissionAllow):
        return "denied"
    return "error"


def stopped_result(plan: CallPlan, message: str) -> ToolResult:
    """The is_error result of a call the orchestrator stopped or never started."""
    return ToolResult(
        tool_use_id=plan.call.id,
        content=error_content(message),
        is_error=True,
        tool_name=plan.tool_name,
    )


def sentence(reason: str) -> str:
    """`reason` with a capital first letter, so it can open a message."""
    return reason[:1].upper() + reason[1:] if reason else "Stopped"


def sibling_failed_reason(failed: CallPlan) -> str:
    """Why calls beside a failed one are cancelled (the wording the model sees)."""
    return f"a sibling tool call ({failed.tool_name} {failed.call.id}) failed"
