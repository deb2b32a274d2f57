"""Agent: starts a subagent, in the foreground (its report is the result) or in the background
(a task the Task tools can read and stop).

Several Agent calls of one message run concurrently (the tool is concurrency-safe); each
subagent has its own conversation and abort signal and shares the session's model,
approver and permission state (see `subagents`). The report is returned with the agent's
id; a report over the result budget is persisted and previewed like any big result. A
foreground subagent's events go to `context.on_child_event`, so the orchestrator shows its
calls live under the Agent call (a background one outlives its call and reports nothing).
A background subagent is a task of the conversation (`tasks.registry`): the stop button and
the end of the conversation stop it, with the commands it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool, no_permission_needed
from ...core.types import ToolError, ToolInputError
from ..tasks.registry import background_tasks
from ..team.teams import team_prompt, teams
from ..worktree import effective_cwd
from . import subagents
from .agent_types import agent_types
from .prompt import DESCRIPTION, FOOTER, GENERAL_PURPOSE, NAME
from .subagents import MAIN_ONLY_FLAG, Subagent

MAX_REPORT_CHARS = 40_000


class AgentInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="What the agent will do, in 3-5 words.")
    prompt: str = Field(description="The whole task: the agent sees nothing else.")
    subagent_type: str = Field(default=GENERAL_PURPOSE, description="The kind of agent.")
    run_in_background: bool = Field(
        default=False, description="Return at once; read the report later with TaskGet."
    )
    name: str | None = Field(default=None, description="A name teammates can message.")
    team_name: str | None = Field(default=None, description="The team it joins.")


async def start_agent(input: AgentInput, context: ToolUseContext) -> str:
    cwd = effective_cwd(context)
    types = agent_types(cwd)
    agent_type = types.get(input.subagent_type)
    if agent_type is None:
        raise ToolInputError(
            f"Unknown subagent_type {input.subagent_type!r}. Available: {', '.join(types)}."
        )
    if agent_type.problem is not None:
        raise ToolInputError(agent_type.problem)
    if not input.prompt.strip():
        raise ToolInputError("The prompt is empty: tell the agent what to do.")
    note = ""
    if input.team_name is not None:
        team = teams(context).get(input.team_name)
        if team is None:
            raise ToolInputError(f"No team {input.team_name!r}; create it with TeamCreate.")
        if not input.name:
            raise ToolInputError("A team member needs a `name` its teammates can message.")
        if input.name in team.members:
            raise ToolInputError(f"Team {team.name} already has a member named {input.name!r}.")
        note = team_prompt(context, team, input.name)
    agent = subagents.create(
        context,
        agent_type=agent_type,
        description=input.description,
        cwd=cwd,
        name=input.name,
        team=input.team_name,
        team_prompt=note,
        background=input.run_in_background,
    )
    if input.team_name is not None and input.name:
        teams(context).join(input.team_name, input.name, agent.id)
    if input.run_in_background:
        return _start_in_background(agent, input.prompt, context)
    report = await subagents.run(
        agent, input.prompt, abort=agent.loop.context.abort, on_event=context.on_child_event
    )
    return _with_footer(agent, report)


def _start_in_background(agent: Subagent, prompt: str, context: ToolUseContext) -> str:
    registry = background_tasks(context)
    holder: dict[str, asyncio.Task[str]] = {}

    def stop_now() -> None:
        # The abort signal cancels the run; cancelling the task as well reaches it even
        # before its first turn. Its commands' process groups are killed as it unwinds.
        agent.abort.abort("stopped")
        agent.status = "stopped"
        running = holder.get("task")
        if running is not None and not running.done():
            running.cancel()

    async def stop() -> None:
        stop_now()
        running = holder.get("task")
        if running is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running

    try:
        record = registry.register(
            kind="agent",
            description=agent.description,
            stop=stop,
            stop_now=stop_now,
            owner=context.agent_id,
            task_id=agent.id,
        )
    except ValueError as exc:  # the conversation has ended
        raise ToolError(str(exc)) from None

    async def work() -> str:
        try:
            report = await subagents.run(agent, prompt)
        except asyncio.CancelledError:
            record.finish("stopped", result=agent.last_report or None)
            raise
        except Exception as exc:
            record.finish("failed", result=f"{type(exc).__name__}: {exc}")
            return ""
        record.finish("completed", result=_with_footer(agent, report))
        return report

    # Busy from now on, so mail sent before its first turn waits in its mailbox instead of
    # starting a run of its own ahead of the prompt.
    agent.status = "running"
    holder["task"] = asyncio.ensure_future(work())
    return (
        f"Started background agent {agent.id} ({agent.description}). Its task id is "
        f"{agent.id}: read its report with TaskGet, stop it with TaskStop, message it with "
        "SendMessage."
    )


def _with_footer(agent: Subagent, report: str) -> str:
    text = report.strip() or "(the agent ended without a report)"
    if len(text) > MAX_REPORT_CHARS:
        path = agent.transcript_path
        where = f" The whole conversation is in {path}." if path else ""
        text = text[:MAX_REPORT_CHARS] + f"\n[report cut at {MAX_REPORT_CHARS} characters.{where}]"
    return text + FOOTER.format(id=agent.id)


def _description() -> str:
    return DESCRIPTION.format(types=", ".join(agent_types(Path(os.getcwd()))))


def make_tool() -> Tool[AgentInput]:
    """A fresh Agent tool (not given to subagents, so agents do not nest by default)."""
    return build_tool(
        name=NAME,
        check_permissions=no_permission_needed,
        input_model=AgentInput,
        call=start_agent,
        description=_description,
        concurrency_safe=True,
        interrupt_behavior="cancel",
        max_result_size_chars=MAX_REPORT_CHARS + 1_000,
        render_tool_use=lambda input: input.description,
        search_hint="start a subagent for a task in parallel",
        extras={MAIN_ONLY_FLAG: True},
    )


TOOL = make_tool()
