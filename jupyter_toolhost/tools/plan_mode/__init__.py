"""EnterPlanMode and ExitPlanMode: switch the permission mode to `plan` and back.

Entering remembers the current mode in `ToolPermissionContext.pre_plan_mode`. ExitPlanMode
asks for approval through its permission check (an "ask" carrying the plan, answered by the
session's approver: the approval widget in a notebook, a policy elsewhere, a denial when no
one can answer), and only a call that was approved runs and restores the previous mode; a
rejected plan leaves the session in plan mode with the user's feedback for the model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import AppState, ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionAsk,
    PermissionMode,
    PermissionResult,
    ToolInputError,
)
from .prompt import APPROVED, ASK, ENTER, ENTER_DESCRIPTION, ENTERED, EXIT, EXIT_DESCRIPTION


class EnterPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExitPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str = Field(description="The plan to approve, in markdown.")


def enter_plan_mode(input: EnterPlanModeInput, context: ToolUseContext) -> str:
    if context.permission_context.mode == "plan":
        raise ToolInputError("Already in plan mode; present the plan with ExitPlanMode.")

    def enter(state: AppState) -> AppState:
        permissions = state.tool_permission_context
        if permissions.mode == "plan":
            return state
        updated = replace(permissions, mode="plan", pre_plan_mode=permissions.mode)
        return replace(state, tool_permission_context=updated)

    context.set_app_state(enter)
    return ENTERED


async def check_exit(input: ExitPlanModeInput, context: ToolUseContext) -> PermissionResult:
    """Ask the user to approve the plan (only in plan mode; elsewhere the call fails)."""
    if context.permission_context.mode != "plan":
        return PermissionAllow()
    if not input.plan.strip():
        return PermissionAllow()
    plan = input.plan.strip()
    return PermissionAsk(
        ASK.format(plan=plan),
        DecisionReason("tool", "a plan needs the user's approval", EXIT),
        plan=plan,
    )


def exit_plan_mode(input: ExitPlanModeInput, context: ToolUseContext) -> str:
    if context.permission_context.mode != "plan":
        raise ToolInputError("Not in plan mode; there is nothing to exit.")
    if not input.plan.strip():
        raise ToolInputError("The plan is empty; write the plan you want approved.")
    restored: list[PermissionMode] = []

    def leave(state: AppState) -> AppState:
        permissions = state.tool_permission_context
        mode: PermissionMode = permissions.pre_plan_mode or "default"
        restored.append(mode)
        updated = replace(permissions, mode=mode, pre_plan_mode=None)
        return replace(state, tool_permission_context=updated)

    context.set_app_state(leave)
    return APPROVED.format(mode=restored[-1], plan=input.plan.strip())


def make_tools() -> list[Tool[Any]]:
    """Fresh EnterPlanMode and ExitPlanMode tools."""
    return [
        build_tool(
            name=ENTER,
            input_model=EnterPlanModeInput,
            call=enter_plan_mode,
            description=ENTER_DESCRIPTION,
            read_only=True,
            should_defer=True,
            search_hint="plan mode design explore before editing",
        ),
        build_tool(
            name=EXIT,
            input_model=ExitPlanModeInput,
            call=exit_plan_mode,
            description=EXIT_DESCRIPTION,
            read_only=True,
            check_permissions=check_exit,
            render_tool_use=lambda input: "plan for approval",
            search_hint="present plan for approval leave plan mode",
        ),
    ]
