"""The hooks around a prompt: UserPromptSubmit before the first request, Stop at its end.

Claude Code's semantics, on the session's `Hooks` (subagents run none of these):

- UserPromptSubmit gets the ``prompt``. A block (exit code 2, ``decision: block`` or
  ``continue: false``) means no request is sent and the prompt never joins the conversation;
  context it adds (plain stdout, ``additionalContext``) goes into the user message as text
  blocks after the prompt.
- Stop runs when the model ends its turn (``end_turn``) with no tool calls, with
  ``stop_hook_active`` true when a Stop hook already forced a continuation in this run. A
  block (exit 2 with stderr, ``decision: block`` with ``reason``) sends the reason to the
  model as a user message and asks again, at most `MAX_STOP_CONTINUATIONS` times per run;
  ``continue: false`` ends the run.

Every hook failure and every verdict is reported by the loop (`AgentLoop.report_hook`): a
`Notice` for the cell and the terminal, a ``hook`` record in the transcript; failures never
reach the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .hooks import HookEvent, HookInput, HookOutput, Hooks

if TYPE_CHECKING:
    from ..core.context import ToolUseContext


class _TranscriptFile(Protocol):
    @property
    def path(self) -> Path: ...


class TurnHost(Protocol):
    """What these hooks need of the loop that runs them (`agent.loop.AgentLoop` is one):
    the hooks live below the loop, so they see it through this protocol."""

    @property
    def hooks(self) -> Hooks | None: ...

    @property
    def context(self) -> ToolUseContext: ...

    @property
    def transcript(self) -> _TranscriptFile | None: ...

    def working_directory(self) -> Path: ...

    def report_hook(self, event: HookEvent, outcome: str, text: str) -> None: ...

    def report_hook_errors(self, event: HookEvent, errors: Sequence[str]) -> None: ...


MAX_STOP_CONTINUATIONS = 8
"""Continuations Stop hooks may force in one run before the loop lets the model stop."""
STOP_FEEDBACK = "Stop hook feedback:\n{reason}"


@dataclass(frozen=True, slots=True)
class PromptVerdict:
    """What the UserPromptSubmit hooks said about a prompt."""

    blocked: str | None = None
    """Why the prompt was blocked; None when it may go."""
    context: tuple[str, ...] = ()
    """Text to add after the prompt, in the same user message."""


@dataclass(frozen=True, slots=True)
class StopVerdict:
    """What the Stop hooks said about the model stopping."""

    go_on: str | None = None
    """The reason to tell the model when it must continue; None lets it stop."""
    ended: str | None = None
    """``continue: false``: the run ends, for this reason (shown to the user)."""


def _why(output: HookOutput) -> str:
    detail = output.reason.detail if output.reason is not None else ""
    return detail or output.stop_reason or "no reason given"


def prompt_verdict(output: HookOutput) -> PromptVerdict:
    """Read the combined answer of the UserPromptSubmit hooks."""
    if output.permission_decision == "deny" or output.prevent_continuation:
        return PromptVerdict(blocked=_why(output))
    return PromptVerdict(context=tuple(t for t in output.additional_context if t.strip()))


def stop_verdict(output: HookOutput) -> StopVerdict:
    """Read the combined answer of the Stop hooks (``continue: false`` wins over a block)."""
    if output.prevent_continuation:
        return StopVerdict(ended=output.stop_reason or _why(output))
    if output.permission_decision == "deny":
        return StopVerdict(go_on=_why(output))
    return StopVerdict()


async def run_prompt_hooks(loop: TurnHost, prompt: str) -> PromptVerdict:
    """Run the session's UserPromptSubmit hooks on `prompt`; failures are reported."""
    hooks = loop.hooks
    if hooks is None or not hooks.for_event("UserPromptSubmit", None):
        return PromptVerdict()
    output = await hooks.run(hook_input(loop, "UserPromptSubmit", prompt=prompt))
    loop.report_hook_errors("UserPromptSubmit", output.errors)
    verdict = prompt_verdict(output)
    if verdict.blocked is not None:
        loop.report_hook("UserPromptSubmit", "blocked", blocked_text(verdict.blocked))
    return verdict


async def run_stop_hooks(loop: TurnHost, *, continuations: int) -> StopVerdict:
    """Run the session's Stop hooks; `continuations` is how many they forced this run."""
    hooks = loop.hooks
    if hooks is None or not hooks.for_event("Stop", None):
        return StopVerdict()
    output = await hooks.run(hook_input(loop, "Stop", stop_hook_active=continuations > 0))
    loop.report_hook_errors("Stop", output.errors)
    verdict = stop_verdict(output)
    if verdict.ended is not None:
        loop.report_hook("Stop", "ended", f"A Stop hook ended the run: {verdict.ended}")
    elif verdict.go_on is not None and continuations >= MAX_STOP_CONTINUATIONS:
        text = (
            f"Stop hooks asked the model to go on {continuations} times in a row; "
            f"it stops here. Last reason: {verdict.go_on}"
        )
        loop.report_hook("Stop", "limit", text)
        return StopVerdict()
    elif verdict.go_on is not None:
        text = f"A Stop hook asked the model to go on: {verdict.go_on}"
        loop.report_hook("Stop", "continued", text)
    return verdict


def blocked_text(reason: str) -> str:
    """The run's result text when a UserPromptSubmit hook blocked the prompt."""
    return f"The prompt was blocked by a UserPromptSubmit hook: {reason}"


def hook_input(
    loop: TurnHost,
    event: HookEvent,
    *,
    prompt: str | None = None,
    stop_hook_active: bool | None = None,
) -> HookInput:
    """The input of a hook that is about the session, not about one tool call."""
    context = loop.context
    transcript = loop.transcript
    return HookInput(
        hook_event_name=event,
        session_id=context.session_id,
        cwd=str(loop.working_directory()),
        permission_mode=context.permission_context.mode,
        transcript_path=str(transcript.path) if transcript is not None else "",
        prompt=prompt,
        stop_hook_active=stop_hook_active,
    )
