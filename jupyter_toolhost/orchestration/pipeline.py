"""The per-call pipeline: one tool_use in, exactly one tool_result out.

The steps, in order (the order Claude Code's hooks documentation gives: PreToolUse runs
before the permission check, PostToolUse after the call succeeds,
https://docs.anthropic.com/en/docs/claude-code/hooks): find the tool → validate the input →
`backfill_observable_input` → PreToolUse hooks → permission (`can_use_tool`) → `call()` →
PostToolUse hooks → secrets redacted (`core.redaction`, with the context's redactor) →
images made valid for the API (`images.fit_content`) → the result budget (for every result:
errors and hook-rewritten output too) → tool_result. Every failure on the way becomes an
`is_error` result here, in this one module; nothing raises out of `run()` except the
cancellation of the task that awaits it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from pydantic import BaseModel, ValidationError

from ..core.context import AbortSignal, Progress, ToolUseContext, as_progress
from ..core.error_results import error_content
from ..core.errors import ToolhostError
from ..core.images import fit_content
from ..core.redaction import Redactor
from ..core.results import DEFAULT_RESULT_CAP, ResultStore, describe_error, effective_threshold
from ..core.tool import Tool, ToolOutput
from ..core.types import (
    ContentBlock,
    PermissionAllow,
    PermissionDeny,
    PermissionResult,
    ToolCall,
    ToolError,
    ToolResult,
    ToolResultContent,
)
from ..hooks.hooks import HookEvent, HookInput, HookOutput, Hooks
from ..permissions.api import BasicCanUseTool, CanUseTool, PermissionRequest
from .checkpoints import CheckpointStore, writes_path
from .concurrency import sync_tool_pool

SYNC_STOP_WAIT_S = 0.5
"""How long a stopped sync call's thread is given to notice its abort flag and return."""
ASYNC_STOP_WAIT_S = 0.5
"""How long a stopped async call is given to run its cleanup (its `finally` blocks: a
process group killed, a sandbox's proxy closed) before its result is written."""
STOPPED_WHEN_ASKED = "The tool stopped when asked."
STILL_RUNNING = (
    "The tool's function runs in a worker thread, which cannot be killed, and had not "
    "returned when this result was written: it may still be running and may still change "
    "things (files, variables) after this."
)

CallPhase: TypeAlias = Literal["preparing", "calling", "finishing"]


@dataclass(eq=False)
class CallHandle:
    """What the orchestrator can see of one call while the pipeline runs it.

    `phase` is "preparing" through validation, PreToolUse hooks and the permission check
    (an approval prompt included), "calling" while the tool's own `call()` runs, and
    "finishing" after it (the result budget, PostToolUse hooks).
    """

    phase: CallPhase = "preparing"
    thread: Future[Any] | None = None
    """The worker-thread future of a sync `call()`, once it was submitted."""

    @property
    def thread_running(self) -> bool:
        """A sync `call()` was submitted to a worker thread and has not returned."""
        return self.thread is not None and not self.thread.done()


def find_tool(name: str, tools: Sequence[Tool[Any]]) -> Tool[Any] | None:
    """The enabled tool called `name`, if there is one."""
    for candidate in tools:
        if candidate.name == name:
            return candidate if is_enabled(candidate) else None
    return None


def is_enabled(tool: Tool[Any]) -> bool:
    """The tool's `is_enabled()`; one that raises counts as disabled (fails closed)."""
    try:
        return bool(tool.is_enabled())
    except Exception:
        return False


def parse_input(tool: Tool[Any], raw: Any) -> BaseModel:
    """Validate raw input against the tool's model; raises `ToolInputValidationError`."""
    if not isinstance(raw, Mapping):
        raise ToolInputValidationError(
            f"InputValidationError: {tool.name} expects a JSON object as input, "
            f"got {type(raw).__name__}"
        )
    try:
        return tool.input_model.model_validate(dict(cast(Mapping[str, Any], raw)))
    except ValidationError as exc:
        raise ToolInputValidationError(describe_validation_error(tool.name, exc)) from None


class ToolInputValidationError(ToolError):
    """The model's input does not fit the tool's schema."""


ParsedInput: TypeAlias = BaseModel | ToolInputValidationError | None
"""A call's input after its one validation: the tool's model, the error the model will be
told, or None when it was not validated yet."""


def parsed_or_error(tool: Tool[Any], raw: Any) -> BaseModel | ToolInputValidationError:
    """`parse_input`, with a validation error returned instead of raised."""
    try:
        return parse_input(tool, raw)
    except ToolInputValidationError as exc:
        return exc


def describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    """Pydantic's errors in a few lines the model can act on."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(input)"
        match error["type"]:
            case "missing":
                lines.append(f"- The required parameter `{where}` is missing")
            case "extra_forbidden":
                lines.append(f"- An unexpected parameter `{where}` was provided")
            case _:
                lines.append(f"- `{where}`: {error['msg']}")
    issues = "issue" if len(lines) == 1 else "issues"
    return f"InputValidationError: {tool_name} failed due to the following {issues}:\n" + (
        "\n".join(lines)
    )


@dataclass
class Pipeline:
    """Runs single tool calls for one session; the orchestrator decides when."""

    results: ResultStore
    checkpoints: CheckpointStore | None = None
    """Where the files calls write are checkpointed before they change (None: nowhere)."""
    can_use_tool: CanUseTool = field(default_factory=BasicCanUseTool)
    hooks: Hooks = field(default_factory=Hooks)
    on_hook_errors: Callable[[HookEvent, Sequence[str]], None] | None = None
    """Where the hooks' failures go (the user, never the model); the session's loop sets it."""

    async def run(
        self,
        call: ToolCall,
        context: ToolUseContext,
        *,
        handle: CallHandle | None = None,
        parsed: ParsedInput = None,
    ) -> ToolResult:
        """Run one call through every step; always returns exactly one result.

        `handle` (the orchestrator's) is kept up to date with the call's phase. `parsed` is
        the call's input as the orchestrator validated it, so that it is validated once.
        """
        tool = find_tool(call.name, context.options.tools)
        if tool is None:
            return self._within_budget(self._unknown_tool(call, context), None, context)
        checked = parsed if parsed is not None else parsed_or_error(tool, call.input)
        if isinstance(checked, ToolInputValidationError):
            return self._within_budget(_error(call, str(checked), tool), tool, context)
        result = await self._run_parsed(call, tool, checked, context, handle or CallHandle())
        return self._within_budget(result, tool, context)

    def _within_budget(
        self, result: ToolResult, tool: Tool[Any] | None, context: ToolUseContext
    ) -> ToolResult:
        """Secrets redacted, images made valid for the API, then the result budget, for
        every result alike (errors and hook-rewritten output too).

        Redaction comes first, so that the persisted copy, its preview, the cell's view
        (`displays` included) and the text hooks add beside the result never hold a
        secret the model must not see."""
        declared = tool.max_result_size_chars if tool is not None else DEFAULT_RESULT_CAP
        try:
            redact_result(result, context.options.redactor)
            result.content = fit_content(result.content)
            return self.results.apply_threshold(result, effective_threshold(declared))
        except Exception as exc:  # the store handles OSError itself; this is a bug's net
            _log.exception("the result budget failed for %s", result.tool_use_id)
            return _error_like(result, f"The result could not be stored: {describe_error(exc)}")

    async def _run_parsed(
        self,
        call: ToolCall,
        tool: Tool[Any],
        parsed: BaseModel,
        context: ToolUseContext,
        handle: CallHandle,
    ) -> ToolResult:
        observable = _observable(tool, parsed)
        pre = await self._run_hooks("PreToolUse", call, tool, observable, context)
        if pre.updated_input is not None:
            rewritten = parsed_or_error(tool, pre.updated_input)
            if isinstance(rewritten, ToolInputValidationError):
                return _error(call, f"A PreToolUse hook rewrote the input badly: {rewritten}", tool)
            parsed, observable = rewritten, _observable(tool, rewritten)

        request = PermissionRequest(tool, parsed, observable, context, call.id, pre)
        try:
            decision = await self.can_use_tool(request)
        except Exception as exc:
            decision = PermissionDeny(f"The permission check failed: {describe_error(exc)}")
        if not isinstance(decision, PermissionAllow):
            message = getattr(decision, "message", "Permission was not granted.")
            return _error(call, message, tool, decision=decision)
        if decision.updated_input is not None:
            rewritten = parsed_or_error(tool, decision.updated_input)
            if isinstance(rewritten, ToolInputValidationError):
                message = f"The permission check rewrote the input badly: {rewritten}"
                return _error(call, message, tool)
            parsed = rewritten

        result = await self._call(call, tool, parsed, context, decision, handle)
        result.additional_context = (
            *pre.additional_context,
            *decision.context,
            *result.additional_context,
        )
        return result

    async def _call(
        self,
        call: ToolCall,
        tool: Tool[Any],
        parsed: BaseModel,
        context: ToolUseContext,
        decision: PermissionResult,
        handle: CallHandle,
    ) -> ToolResult:
        call_context = context.for_call(call.id, context.abort)
        if call_context.progress is not None:
            call_context.progress = redacted_progress(
                call_context.progress, context.options.redactor
            )
        written = self._checkpoint(tool, parsed, context)
        handle.phase = "calling"
        try:
            output = await _invoke(tool, parsed, call_context, handle)
        except _Cancelled as cancelled:
            return _error(call, f"Cancelled: {cancelled.reason}", tool, decision=decision)
        except Exception as exc:
            message = str(exc) if isinstance(exc, ToolError) else describe_error(exc)
            failed = _error(call, message, tool, decision=decision)
            post = await self._run_hooks(
                "PostToolUseFailure", call, tool, parsed, context, error=message
            )
            failed.additional_context = post.additional_context
            return failed
        finally:
            handle.phase = "finishing"
            if written is not None and self.checkpoints is not None:
                self.checkpoints.settle(written)

        try:
            content = tool.map_result(output)
        except Exception as exc:
            return _error(call, f"Could not convert the result: {describe_error(exc)}", tool)
        result = ToolResult(
            tool_use_id=call.id,
            content=content or f"({tool.name} completed with no output)",
            tool_name=tool.name,
            decision=decision,
            output=output.data if isinstance(output, ToolOutput) else output,
            context_modifier=output.context_modifier if isinstance(output, ToolOutput) else None,
            displays=tuple(output.displays) if isinstance(output, ToolOutput) else (),
        )
        post = await self._run_hooks("PostToolUse", call, tool, parsed, context, response=content)
        return _apply_post_hooks(result, post)

    def _checkpoint(
        self, tool: Tool[Any], parsed: BaseModel, context: ToolUseContext
    ) -> Path | None:
        """Keep the prior state of the file the call declares it writes (see `checkpoints`)."""
        if self.checkpoints is None:
            return None
        path = writes_path(tool, parsed, context)
        if path is not None:
            self.checkpoints.capture(path, str(tool.get_path(parsed) if tool.get_path else path))
        return path

    def _unknown_tool(self, call: ToolCall, context: ToolUseContext) -> ToolResult:
        names = sorted(t.name for t in context.options.tools if is_enabled(t))
        available = ", ".join(names) if names else "(none)"
        return _error(call, f"No such tool available: {call.name}. Available tools: {available}")

    async def _run_hooks(
        self,
        event: HookEvent,
        call: ToolCall,
        tool: Tool[Any],
        input: Mapping[str, Any] | BaseModel,
        context: ToolUseContext,
        *,
        error: str | None = None,
        response: Any = None,
    ) -> HookOutput:
        """Run the hooks of `event` for this call; free when none match (the common case)."""
        if not self.hooks.for_event(event, tool.name):
            return _NO_HOOKS
        observable = _observable(tool, input) if isinstance(input, BaseModel) else input
        output = await self.hooks.run(
            HookInput(
                hook_event_name=event,
                session_id=context.session_id,
                cwd=str(context.cwd),
                permission_mode=context.permission_context.mode,
                transcript_path=str(context.session_dir() / "transcript.jsonl"),
                tool_name=tool.name,
                tool_input=observable,
                tool_use_id=call.id,
                tool_response=response,
                error=error,
            )
        )
        if output.errors and self.on_hook_errors is not None:
            try:
                self.on_hook_errors(event, output.errors)
            except Exception:
                _log.exception("reporting %s hook errors failed", event)
        return output


def redact_result(result: ToolResult, redactor: Redactor) -> ToolResult:
    """`result` with every secret in what the model and the cell see replaced: its
    content, its displays and the text hooks add beside it."""
    result.content = redactor.content(result.content)
    if result.displays:
        result.displays = tuple(redactor.bundle(shown) for shown in result.displays)
    if result.additional_context:
        result.additional_context = tuple(redactor.text(t) for t in result.additional_context)
    return result


def redacted_progress(
    progress: Callable[[str | Progress], None], redactor: Redactor
) -> Callable[[str | Progress], None]:
    """A progress callback whose text and tail lines are redacted before the cell shows
    them (a running command's last lines)."""

    def report(value: str | Progress) -> None:
        shown = as_progress(value)
        progress(
            replace(
                shown,
                text=redactor.text(shown.text),
                tail=tuple(redactor.text(line) for line in shown.tail),
            )
        )

    return report


_NO_HOOKS = HookOutput()
_log = logging.getLogger(__name__)


class _Cancelled(ToolhostError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _invoke(
    tool: Tool[Any], parsed: BaseModel, context: ToolUseContext, handle: CallHandle
) -> Any:
    """Run `call()` (in a worker thread when it is sync), racing the call's abort signal.

    An async call is cancelled when the signal fires, and its result written once it has
    ended (its cleanup done) or after `ASYNC_STOP_WAIT_S`. A sync one cannot be: its thread is
    told through the signal (`context.abort`, `context.cancelled()`) and given
    `SYNC_STOP_WAIT_S` to return; the result says whether it did. Its pool thread stays
    taken until the function returns.
    """
    signal: AbortSignal = context.abort
    if signal.aborted:
        raise _Cancelled(signal.reason or "aborted")
    if inspect.iscoroutinefunction(tool.call):
        work: asyncio.Future[Any] = asyncio.ensure_future(tool.call(parsed, context))
    else:
        runner = contextvars.copy_context().run
        thread = sync_tool_pool().submit(runner, _call_sync, tool, parsed, context)
        handle.thread = thread
        work = asyncio.wrap_future(thread)
    aborted = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        work.add_done_callback(_retrieve)
        raise
    finally:
        aborted.cancel()
    if work in done:
        return work.result()
    reason = signal.reason or "aborted"
    if handle.thread is None:
        work.cancel()
        # A tool that watches the signal itself may have ended with its own error first:
        # retrieved, so asyncio does not log it as never retrieved.
        work.add_done_callback(_retrieve)
        # Its cleanup runs before the call is reported stopped: a cancelled task that no one
        # awaits finishes only if the loop runs on, and is lost when the loop closes first.
        await asyncio.wait({work}, timeout=ASYNC_STOP_WAIT_S)
        raise _Cancelled(reason)
    if handle.thread.cancel():  # still waiting for a free thread: it never runs
        raise _Cancelled(reason)
    await asyncio.wait({work}, timeout=SYNC_STOP_WAIT_S)
    if work.done():
        if not work.cancelled():
            work.exception()  # retrieved: what it raised on the way out is not the answer
        raise _Cancelled(f"{reason}. {STOPPED_WHEN_ASKED}")
    raise _Cancelled(f"{reason}. {STILL_RUNNING}")


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _call_sync(tool: Tool[Any], parsed: BaseModel, context: ToolUseContext) -> Any:
    result = tool.call(parsed, context)
    if inspect.isawaitable(result):
        raise TypeError("a sync call() returned an awaitable; declare it `async def`")
    return result


def _observable(tool: Tool[Any], parsed: BaseModel) -> dict[str, Any]:
    data = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if tool.backfill_observable_input is None:
        return data
    try:
        return tool.backfill_observable_input(dict(data))
    except Exception:
        return data


def _apply_post_hooks(result: ToolResult, post: HookOutput) -> ToolResult:
    if post.updated_output is not None:
        result.content = _as_content(post.updated_output)
    result.additional_context = (*result.additional_context, *post.additional_context)
    return result


def _as_content(value: Any) -> ToolResultContent:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return cast(list[ContentBlock], value)  # a hook's blocks, passed on as given
    return json.dumps(value, ensure_ascii=False, default=str)


def _error_like(result: ToolResult, message: str) -> ToolResult:
    result.content = error_content(message)
    result.is_error = True
    return result


def _error(
    call: ToolCall,
    message: str,
    tool: Tool[Any] | None = None,
    *,
    decision: PermissionResult | None = None,
) -> ToolResult:
    return ToolResult(
        tool_use_id=call.id,
        content=error_content(message),
        is_error=True,
        tool_name=tool.name if tool else call.name,
        decision=decision,
    )
