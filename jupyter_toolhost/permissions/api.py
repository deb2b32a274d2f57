"""The seams of the permission system: what the pipeline asks, and who answers an "ask".

`CanUseTool` is the function the pipeline calls for every call; it returns allow or deny
(an "ask" is resolved inside it, by an `Approver`). `Approver` is the user's side: widgets in
a notebook, a terminal prompt, or a policy in tests and CI.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, assert_never

from ..core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
)
from ..hooks.hooks import HookOutput

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core.context import ToolUseContext
    from ..core.tool import Tool


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One call waiting for a permission decision."""

    tool: Tool[Any]
    input: BaseModel
    """The parsed input (after PreToolUse hooks)."""
    observable_input: Mapping[str, Any]
    """The input as hooks and people see it (with backfilled fields)."""
    context: ToolUseContext
    tool_use_id: str
    hook: HookOutput = field(default_factory=HookOutput)


ApprovalChoice: TypeAlias = Literal["allow", "cell", "always", "deny"]
"""Allow once; allow for this cell (its rules hold until the cell ends); always allow (its
rules hold for the session, and are saved when asked); deny."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is shown: the call, why it is asked, and what "always" would add."""

    tool_name: str
    display_name: str
    summary: str
    input: Mapping[str, Any]
    message: str
    reason: DecisionReason | None
    suggested_rules: tuple[str, ...]
    tool_use_id: str
    agent_id: str | None = None
    destructive: bool = False
    """The tool declares this call destructive: the prompt warns with `DESTRUCTIVE_WARNING`."""
    plan: str | None = None
    """A plan presented for approval (ExitPlanMode's), in Markdown; None for a call."""


DESTRUCTIVE_WARNING = "This call may not be undone: its tool marks it as destructive."
"""The line an approval prompt adds for a destructive call (the seed's `isDestructive`)."""


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The approver's answer. `feedback` (on deny) goes back to the model."""

    choice: ApprovalChoice
    feedback: str | None = None
    save: bool = False
    """With "always": also write the rules to the project settings."""
    edited_input: Mapping[str, Any] | None = None
    """The input as the person changed it before allowing it (allowed once); the call runs
    with it if it is valid and no deny rule refuses it, and the model is told."""


class Approver(Protocol):
    """Answers "ask" decisions on the user's behalf."""

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision: ...


class CanUseTool(Protocol):
    """Decides one call: returns allow (possibly with rewritten input) or deny, never ask."""

    async def __call__(self, request: PermissionRequest) -> PermissionResult: ...


async def tool_check(request: PermissionRequest) -> PermissionResult:
    """The tool's own `check_permissions`, sync or async; a raising check denies."""
    try:
        result = request.tool.check_permissions(request.input, request.context)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        return PermissionDeny(
            f"{request.tool.name}'s permission check failed: {type(exc).__name__}: {exc}",
            DecisionReason("tool", "permission check raised", request.tool.name),
        )
    if not isinstance(result, PermissionAllow | PermissionDeny | PermissionAsk):
        return PermissionDeny(
            f"{request.tool.name}'s permission check returned {type(result).__name__}, "
            "not a PermissionResult",
            DecisionReason("tool", "invalid permission result", request.tool.name),
        )
    return result


def approval_request(request: PermissionRequest, ask: PermissionAsk) -> ApprovalRequest:
    """Describe an ask for an approver."""
    return ApprovalRequest(
        tool_name=request.tool.name,
        display_name=request.tool.display_name(request.input),
        summary=request.tool.summarize(request.input),
        input=dict(request.observable_input),
        message=ask.message,
        reason=ask.reason,
        suggested_rules=ask.suggested_rules,
        tool_use_id=request.tool_use_id,
        agent_id=request.context.agent_id,
        destructive=request.tool.flag(request.tool.is_destructive, request.input),
        plan=ask.plan,
    )


_DETAILS = {"allow": "approved once", "cell": "allowed for this cell", "always": "always allowed"}


async def resolve_ask(
    request: PermissionRequest, ask: PermissionAsk, approver: Approver | None
) -> PermissionResult:
    """Put an ask to the approver; with none, deny with a message that says how to allow."""
    result, _decision = await ask_approver(request, ask, approver)
    return result


async def ask_approver(
    request: PermissionRequest, ask: PermissionAsk, approver: Approver | None
) -> tuple[PermissionResult, ApprovalDecision | None]:
    """Like `resolve_ask`, also returning the approver's decision (None without an approver)."""
    if approver is None:
        return PermissionDeny(
            f"Permission to use {request.tool.name} requires approval, and no one is available "
            "to approve it. Add an allow rule or choose a permission mode that allows it.",
            DecisionReason("default", "no approver", None),
        ), None
    decision = await approver.ask(approval_request(request, ask))
    match decision.choice:
        case "allow" | "cell" | "always":
            detail = _DETAILS[decision.choice]
            return PermissionAllow(ask.updated_input, DecisionReason("approver", detail)), decision
        case "deny":
            message = f"The user denied this {request.tool.name} call."
            if decision.feedback:
                message += f" They said: {decision.feedback}"
            return PermissionDeny(
                message, DecisionReason("approver", "denied by the user")
            ), decision
        case _:
            assert_never(decision.choice)


class BasicCanUseTool:
    """Hooks, then the tool's own check, then the approver — no rules or modes.

    The full decision function (rules, modes, settings) is `permissions.PermissionEngine`;
    this one is what the pipeline uses when it is given nothing else.
    """

    def __init__(self, approver: Approver | None = None) -> None:
        self.approver = approver

    async def __call__(self, request: PermissionRequest) -> PermissionResult:
        hook = request.hook
        if hook.permission_decision == "deny":
            return PermissionDeny(_hook_message(hook, "Blocked"), hook.reason)
        checked = await tool_check(request)
        if isinstance(checked, PermissionDeny):
            return checked
        if hook.permission_decision == "allow" and isinstance(checked, PermissionAsk):
            return PermissionAllow(checked.updated_input, hook.reason)
        if hook.permission_decision == "ask" and isinstance(checked, PermissionAllow):
            checked = PermissionAsk(_hook_message(hook, "Approval asked"), hook.reason)
        if isinstance(checked, PermissionAsk):
            return await resolve_ask(request, checked, self.approver)
        return checked


def _hook_message(hook: HookOutput, verb: str) -> str:
    detail = hook.reason.detail if hook.reason else "a hook"
    return f"{verb} by hook: {detail}"
