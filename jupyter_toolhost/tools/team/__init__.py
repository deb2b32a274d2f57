"""TeamCreate and TeamDelete: named groups of subagents (members join through Agent)."""

from __future__ import annotations

import contextlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool, no_permission_needed
from ...core.types import ToolInputError
from ..agent.subagents import MAIN_ONLY_FLAG, subagents
from ..tasks import board
from ..tasks.registry import background_tasks
from ..tasks.state import set_extra
from .prompt import CREATE, CREATE_DESCRIPTION, DELETE, DELETE_DESCRIPTION
from .teams import Team, Teams, teams

__all__ = ["Team", "Teams", "make_tools", "teams"]


class TeamCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    team_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    description: str = Field(default="", description="What the team is for.")


class TeamDeleteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    team_name: str | None = Field(default=None, description="Default: the active team.")
    stop_members: bool = Field(default=False, description="Stop members still working.")


def create_team(input: TeamCreateInput, context: ToolUseContext) -> str:
    try:
        team = teams(context).create(input.team_name, input.description)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    board.change_list(context, lambda tasks: tasks, name=team.name)
    set_extra(context, board.ACTIVE_TEAM_KEY, team.name)
    return (
        f"Created team {team.name}. Your task list is now the team's. Add members with "
        f'Agent{{team_name: "{team.name}", name: ..., prompt: ..., run_in_background: true}}.'
    )


async def delete_team(input: TeamDeleteInput, context: ToolUseContext) -> str:
    registry = teams(context)
    name = input.team_name or context.get_app_state().extras.get(board.ACTIVE_TEAM_KEY)
    team = registry.get(name) if isinstance(name, str) else None
    if team is None:
        known = ", ".join(t.name for t in registry.all()) or "none"
        raise ToolInputError(f"No team {name!r} (teams: {known}).")
    agents = subagents(context)
    busy = [a for a in agents.team_members(team.name) if a.busy]
    if busy and not input.stop_members:
        names = ", ".join(a.label for a in busy)
        raise ToolInputError(
            f"Team {team.name} still has working members: {names}. Wait for them, stop them "
            "with TaskStop, or pass stop_members: true."
        )
    tasks = background_tasks(context)
    for agent in busy:
        if tasks.get(agent.id) is not None:
            with contextlib.suppress(KeyError, ValueError):
                await tasks.stop(agent.id)
        agent.abort.abort(f"team {team.name} was deleted")
    registry.remove(team.name)
    board.drop_list(context, team.name)
    if context.get_app_state().extras.get(board.ACTIVE_TEAM_KEY) == team.name:
        set_extra(context, board.ACTIVE_TEAM_KEY, None)
    stopped = f" Stopped: {', '.join(a.label for a in busy)}." if busy else ""
    return f"Deleted team {team.name} and its task list.{stopped}"


def make_tools() -> list[Tool[Any]]:
    """Fresh TeamCreate and TeamDelete tools (main agent only)."""
    return [
        build_tool(
            name=CREATE,
            check_permissions=no_permission_needed,
            input_model=TeamCreateInput,
            call=create_team,
            description=CREATE_DESCRIPTION,
            should_defer=True,
            search_hint="create a team of agents working together",
            extras={MAIN_ONLY_FLAG: True},
        ),
        build_tool(
            name=DELETE,
            check_permissions=no_permission_needed,
            input_model=TeamDeleteInput,
            call=delete_team,
            description=DELETE_DESCRIPTION,
            should_defer=True,
            search_hint="delete a team of agents",
            extras={MAIN_ONLY_FLAG: True},
        ),
    ]
