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

The JSON is read through `HookAnswer`: a field of the wrong kind (``"permissionDecision":
"maybe"``, an ``updatedInput`` that is not an object) is an error naming the hook and the
field, shown to the user, and the answer's other fields still count.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from ..core.json_checks import FieldProblem, field_problems, without
from ..core.json_values import json_mapping, json_object
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
        data = json_object(json.loads(text))
    except json.JSONDecodeError as exc:
        return HookOutput(errors=(f"{event} hook `{source}` printed invalid JSON: {exc}",))
    if data is None:
        return HookOutput(errors=(f"{event} hook `{source}` printed JSON that is not an object",))
    return _from_json(event, data, source)


def _text_or_nothing(value: object) -> object:
    """An ``additionalContext`` that is not text has always been passed over, not refused."""
    return value if isinstance(value, str) else None


class HookAnswer(BaseModel):
    """What a hook printed on stdout, as far as it is read here: ``hookSpecificOutput``'s
    keys over the same keys at the top level. Other keys are ignored (Claude Code has more
    than this package reads); ``continue``, the reasons and ``updatedMCPToolOutput`` are
    taken as they come, as they always were."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    decision: Literal["allow", "approve", "ask", "deny", "block"] | None = Field(
        None, validation_alias=AliasChoices("permissionDecision", "decision")
    )
    reason: object = Field(
        None, validation_alias=AliasChoices("permissionDecisionReason", "reason")
    )
    proceed: object = Field(None, alias="continue")
    stop_reason: object = Field(None, alias="stopReason")
    additional_context: Annotated[str | None, BeforeValidator(_text_or_nothing)] = Field(
        None, alias="additionalContext"
    )
    updated_input: dict[str, object] | None = Field(None, alias="updatedInput")
    updated_output: object = Field(None, alias="updatedMCPToolOutput")


_ANSWER = TypeAdapter(HookAnswer)
_DECISION_WORDS = '"allow", "deny" or "ask" (or the older "approve" and "block")'
_EXPECTED = {
    "permissionDecision": _DECISION_WORDS,
    "decision": _DECISION_WORDS,
    "updatedInput": 'an object of the tool\'s input fields, such as {"command": "ls"}',
}
"""What belongs in each field a hook prints, in the words an error shows."""


def read_answer(
    event: HookEvent, data: Mapping[str, object], source: str
) -> tuple[HookAnswer, list[str]]:
    """What a hook printed, and an error for each field that is wrong (naming the hook and
    the field, ``hookSpecificOutput.permissionDecision``); a wrong field is left out and
    the others still count."""
    specific = json_mapping(data.get("hookSpecificOutput"))
    fields = {**data, **(specific or {})}
    errors: list[str] = []
    try:
        return _ANSWER.validate_python(fields), errors
    except ValidationError as error:
        problems = field_problems(error, expected=_EXPECTED)
    for problem in problems:
        inside = specific is not None and problem.loc[:1] and problem.loc[0] in specific
        where = FieldProblem(("hookSpecificOutput", *problem.loc), problem.message)
        errors.append(f"{event} hook `{source}` printed {where if inside else problem}")
    kept = without(fields, [problem.loc[:1] for problem in problems])
    return _ANSWER.validate_python(kept), errors


def _from_json(event: HookEvent, data: Mapping[str, object], source: str) -> HookOutput:
    answer, errors = read_answer(event, data, source)
    decision = _DECISIONS[answer.decision] if answer.decision is not None else None
    text = answer.reason
    stop = answer.proceed is False
    stop_reason = str(answer.stop_reason or text or f"a {event} hook stopped the agent")
    if stop and event == "Stop":
        decision = None  # ``continue: false`` wins over a block: the agent stops here
    elif stop:
        decision = "deny"
        text = answer.stop_reason or text or "the hook stopped the call"
    context = [answer.additional_context] if answer.additional_context is not None else []
    if event in _AFTER_THE_CALL and decision == "deny":
        context.append(str(text or "the hook objected to the result"))
        decision = None
    reason = None
    if decision is not None:
        reason = DecisionReason("hook", str(text) if text else f"{event} hook: {decision}", source)
    return HookOutput(
        permission_decision=decision,
        reason=reason,
        updated_input=answer.updated_input,
        additional_context=tuple(context),
        updated_output=answer.updated_output,
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
