"""Hooks: code that runs around tool calls and may rewrite input, decide, or add context.

Events follow Claude Code's names: PreToolUse, PostToolUse, PostToolUseFailure,
UserPromptSubmit, Stop. A hook is selected by a regex matcher on the tool name (empty or
``*`` matches all) and is either a Python callable (sync or async) or a shell command
configured in settings (see `shell_hooks`). Hooks of one event run one after another in
registration order, each seeing the input as rewritten by the ones before it, so a notebook
gets the same result on every run. Several decisions combine as deny > ask > allow.

A sync Python hook runs in a thread of its own, so its `timeout` holds even when it blocks:
the call goes on without it (the thread cannot be killed; it is a daemon and finishes on its
own). A hook that raises, times out or answers nonsense becomes an entry of
`HookOutput.errors`, which the caller shows to the user and never to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from ..core.types import DecisionReason, RuleBehavior

HookEvent: TypeAlias = Literal[
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"
]
HOOK_EVENTS: tuple[HookEvent, ...] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
)
DEFAULT_HOOK_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class HookInput:
    """What a hook is told; `to_json()` is the JSON a shell hook reads on stdin."""

    hook_event_name: HookEvent
    session_id: str
    cwd: str
    permission_mode: str
    transcript_path: str = ""
    tool_name: str | None = None
    tool_input: Mapping[str, Any] | None = None
    tool_use_id: str | None = None
    tool_response: Any = None
    error: str | None = None
    prompt: str | None = None
    stop_hook_active: bool | None = None
    """Stop only: True when this stop follows a continuation a Stop hook forced."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "permission_mode": self.permission_mode,
            "hook_event_name": self.hook_event_name,
        }
        optional = {
            "tool_name": self.tool_name,
            "tool_input": dict(self.tool_input) if self.tool_input is not None else None,
            "tool_use_id": self.tool_use_id,
            "tool_response": self.tool_response,
            "error": self.error,
            "prompt": self.prompt,
            "stop_hook_active": self.stop_hook_active,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        return data


@dataclass(frozen=True, slots=True)
class HookOutput:
    """What hooks answered, combined over all the hooks that ran."""

    permission_decision: RuleBehavior | None = None
    reason: DecisionReason | None = None
    updated_input: Mapping[str, Any] | None = None
    additional_context: tuple[str, ...] = ()
    updated_output: Any = None
    """PostToolUse only: replaces the tool_result content."""
    errors: tuple[str, ...] = ()
    """Non-blocking hook failures, shown to the user, never to the model."""
    prevent_continuation: bool = False
    """A hook answered ``continue: false``: the agent stops (Stop: it may not be forced on)."""
    stop_reason: str | None = None
    """Why, for the user, when `prevent_continuation` is set."""


HookCallback: TypeAlias = Callable[[HookInput], "HookOutput | Awaitable[HookOutput | None] | None"]

_PRECEDENCE: dict[RuleBehavior, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True, slots=True)
class Hook:
    """One registered hook: an event, a tool-name matcher and what to run."""

    event: HookEvent
    matcher: str
    callback: HookCallback
    source: str = "code"
    timeout: float = DEFAULT_HOOK_TIMEOUT
    _pattern: re.Pattern[str] | None = field(default=None, compare=False)

    def matches(self, tool_name: str | None) -> bool:
        if self.matcher in ("", "*") or tool_name is None:
            return True
        pattern = self._pattern or re.compile(self.matcher)
        return pattern.fullmatch(tool_name) is not None


class Hooks:
    """The hooks of a session."""

    def __init__(self, hooks: list[Hook] | None = None) -> None:
        self._hooks: list[Hook] = list(hooks or [])

    def __len__(self) -> int:
        return len(self._hooks)

    def add(
        self,
        event: HookEvent,
        callback: HookCallback,
        *,
        matcher: str = "",
        source: str = "code",
        timeout: float = DEFAULT_HOOK_TIMEOUT,
    ) -> Hook:
        """Register a hook; an invalid matcher raises here, not at call time."""
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {HOOK_EVENTS}")
        pattern = None if matcher in ("", "*") else re.compile(matcher)
        hook = Hook(event, matcher, callback, source, timeout, pattern)
        self._hooks.append(hook)
        return hook

    def remove(self, hook: Hook) -> None:
        self._hooks.remove(hook)

    def for_event(self, event: HookEvent, tool_name: str | None) -> list[Hook]:
        return [h for h in self._hooks if h.event == event and h.matches(tool_name)]

    async def run(self, hook_input: HookInput) -> HookOutput:
        """Run the matching hooks in order and combine their answers."""
        combined = HookOutput()
        current = hook_input
        for hook in self.for_event(hook_input.hook_event_name, hook_input.tool_name):
            try:
                answer = await asyncio.wait_for(_invoke(hook, current), hook.timeout)
            except TimeoutError:
                message = f"{hook.event} hook {hook.source} timed out after {hook.timeout:g}s"
                combined = replace(combined, errors=(*combined.errors, message))
                continue
            except Exception as exc:
                message = f"{hook.event} hook {hook.source} failed: {type(exc).__name__}: {exc}"
                combined = replace(combined, errors=(*combined.errors, message))
                continue
            if answer is None:
                continue
            combined = _combine(combined, answer, hook)
            if answer.updated_input is not None:
                current = replace(current, tool_input=answer.updated_input)
        return combined


async def _invoke(hook: Hook, hook_input: HookInput) -> HookOutput | None:
    if _is_async(hook.callback):
        result = hook.callback(hook_input)
    else:
        result = await _in_thread(hook.callback, hook_input)
    if inspect.isawaitable(result):
        result = await result
    if result is not None and not isinstance(result, HookOutput):
        raise TypeError(f"a hook must return HookOutput or None, not {type(result).__name__}")
    return result


def _is_async(callback: HookCallback) -> bool:
    call = getattr(callback, "__call__", None)  # noqa: B004 - an object with `async __call__`
    return inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(call)


def _in_thread(callback: HookCallback, hook_input: HookInput) -> asyncio.Future[Any]:
    """Run a sync hook in a daemon thread; the future is its answer.

    Not the loop's executor: a hook that outlives its timeout would hold a worker there,
    and the loop's shutdown would wait for it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Any, error: BaseException | None) -> None:
        if future.done():
            return  # timed out (cancelled) meanwhile
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)

    def work() -> None:
        outcome: Any = None
        error: BaseException | None = None
        try:
            outcome = context.run(callback, hook_input)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # SystemExit and the like stop the hook, not the session
            error = RuntimeError(f"the hook raised {type(exc).__name__}")
        # RuntimeError: the loop closed while the hook ran, so nobody waits for it any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, outcome, error)

    name = f"hook-{getattr(callback, '__name__', type(callback).__name__)}"
    threading.Thread(target=work, name=name, daemon=True).start()
    return future


def _combine(combined: HookOutput, answer: HookOutput, hook: Hook) -> HookOutput:
    decision = combined.permission_decision
    reason = combined.reason
    new = answer.permission_decision
    if new is not None and (decision is None or _PRECEDENCE[new] > _PRECEDENCE[decision]):
        decision = new
        reason = answer.reason or DecisionReason("hook", f"{hook.event} hook", hook.source)
    return HookOutput(
        permission_decision=decision,
        reason=reason,
        updated_input=answer.updated_input
        if answer.updated_input is not None
        else combined.updated_input,
        additional_context=(*combined.additional_context, *answer.additional_context),
        updated_output=answer.updated_output
        if answer.updated_output is not None
        else combined.updated_output,
        errors=(*combined.errors, *answer.errors),
        prevent_continuation=combined.prevent_continuation or answer.prevent_continuation,
        stop_reason=combined.stop_reason or answer.stop_reason,
    )
