"""Shell-command hooks from settings, speaking Claude Code's hook protocol.

The command gets the hook's JSON on stdin (`HookInput.to_json()`) and answers by exit code:
0 — stdout is parsed as JSON if it starts with ``{`` (``hookSpecificOutput`` with
``permissionDecision``, ``permissionDecisionReason``, ``updatedInput``, ``additionalContext``;
the same keys are accepted at the top level, as are the older ``decision: approve|block``
and ``continue: false``); 2 — blocked, stderr is the reason (for PostToolUse it is shown to
the model instead; for Stop it is what the model is told to go on with); any other code —
a non-blocking error that is shown to the user. ``continue: false`` (with ``stopReason``)
ends a Stop for good and blocks the call or prompt of the other events. The timeout kills
the hook's whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..core.types import DecisionReason, RuleBehavior
from .hooks import DEFAULT_HOOK_TIMEOUT, Hook, HookEvent, HookInput, HookOutput, Hooks

_AFTER_THE_CALL = ("PostToolUse", "PostToolUseFailure")
_DECISIONS: dict[str, RuleBehavior] = {
    "allow": "allow",
    "approve": "allow",
    "ask": "ask",
    "deny": "deny",
    "block": "deny",
}
_KILL_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class HookSpec:
    """One shell hook as configured in a settings file."""

    event: HookEvent
    matcher: str
    command: str
    timeout: float = DEFAULT_HOOK_TIMEOUT
    source: str = ""
    """The settings file it came from."""


class ShellHook:
    """A hook callback that runs a shell command (see the module docstring for the protocol)."""

    def __init__(self, command: str, *, timeout: float = DEFAULT_HOOK_TIMEOUT) -> None:
        self.command = command
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"ShellHook({self.command!r}, timeout={self.timeout:g})"

    async def __call__(self, hook_input: HookInput) -> HookOutput:
        payload = json.dumps(hook_input.to_json(), ensure_ascii=False, default=str).encode()
        cwd = hook_input.cwd or None
        # Claude Code's name too, so hooks written for it (and imported) find the project.
        project = {"TOOLHOST_PROJECT_DIR": hook_input.cwd, "CLAUDE_PROJECT_DIR": hook_input.cwd}
        env = {**os.environ, **project}
        process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(payload), self.timeout)
        except TimeoutError:
            await _kill(process)
            return HookOutput(
                errors=(
                    f"{hook_input.hook_event_name} hook `{self.command}` timed out after "
                    f"{self.timeout:g}s and was killed",
                )
            )
        except BaseException:
            await _kill(process)
            raise
        return interpret(
            hook_input.hook_event_name,
            process.returncode or 0,
            stdout.decode(errors="replace"),
            stderr.decode(errors="replace"),
            source=self.command,
        )


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), _KILL_GRACE)


def interpret(event: HookEvent, code: int, stdout: str, stderr: str, *, source: str) -> HookOutput:
    """Turn a hook's exit code and output into a `HookOutput`."""
    if code == 2:
        message = stderr.strip() or f"blocked by hook `{source}`"
        if event in _AFTER_THE_CALL:
            return HookOutput(additional_context=(message,))
        return HookOutput(
            permission_decision="deny", reason=DecisionReason("hook", message, source)
        )
    if code != 0:
        detail = stderr.strip() or stdout.strip() or "no output"
        return HookOutput(errors=(f"{event} hook `{source}` exited with {code}: {detail}",))
    text = stdout.strip()
    if not text.startswith("{"):
        if event == "UserPromptSubmit" and text:
            return HookOutput(additional_context=(text,))
        return HookOutput()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return HookOutput(errors=(f"{event} hook `{source}` printed invalid JSON: {exc}",))
    if not isinstance(data, dict):
        return HookOutput(errors=(f"{event} hook `{source}` printed JSON that is not an object",))
    return _from_json(event, cast("dict[str, Any]", data), source)


def _from_json(event: HookEvent, data: Mapping[str, Any], source: str) -> HookOutput:
    specific = data.get("hookSpecificOutput")
    fields: dict[str, Any] = dict(data)
    if isinstance(specific, Mapping):
        fields.update(cast("Mapping[str, Any]", specific))
    errors: list[str] = []
    raw = fields.get("permissionDecision", fields.get("decision"))
    decision = _DECISIONS.get(raw) if isinstance(raw, str) else None
    if raw is not None and decision is None:
        errors.append(f"{event} hook `{source}`: unknown decision {raw!r}")
    text = fields.get("permissionDecisionReason", fields.get("reason"))
    stop = fields.get("continue") is False
    stop_reason = str(fields.get("stopReason") or text or f"a {event} hook stopped the agent")
    if stop and event == "Stop":
        decision = None  # ``continue: false`` wins over a block: the agent stops here
    elif stop:
        decision = "deny"
        text = fields.get("stopReason") or text or "the hook stopped the call"
    context = (
        [fields["additionalContext"]] if isinstance(fields.get("additionalContext"), str) else []
    )
    if event in _AFTER_THE_CALL and decision == "deny":
        context.append(str(text or "the hook objected to the result"))
        decision = None
    raw_updated: object = fields.get("updatedInput")
    updated: Mapping[str, Any] | None = None
    if isinstance(raw_updated, Mapping):
        updated = cast("Mapping[str, Any]", raw_updated)
    elif raw_updated is not None:
        errors.append(f"{event} hook `{source}`: updatedInput is not an object")
    reason = None
    if decision is not None:
        reason = DecisionReason("hook", str(text) if text else f"{event} hook: {decision}", source)
    return HookOutput(
        permission_decision=decision,
        reason=reason,
        updated_input=dict(updated) if updated is not None else None,
        additional_context=tuple(context),
        updated_output=fields.get("updatedMCPToolOutput"),
        errors=tuple(errors),
        prevent_continuation=stop,
        stop_reason=stop_reason if stop else None,
    )


def register_shell_hooks(hooks: Hooks, specs: Iterable[HookSpec]) -> list[Hook]:
    """Add settings hooks to a session's `Hooks`; each runs with its own timeout."""
    added: list[Hook] = []
    for spec in specs:
        callback = ShellHook(spec.command, timeout=spec.timeout)
        # The outer timeout is a backstop: the hook kills its own process group first.
        added.append(
            hooks.add(
                spec.event,
                callback,
                matcher=spec.matcher,
                source=spec.command,
                timeout=spec.timeout + _KILL_GRACE + 1.0,
            )
        )
    return added
