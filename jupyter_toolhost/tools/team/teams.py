"""Teams: named groups of subagents with a shared task list and a mailbox each.

A team is a record in the session's `Teams` registry (`extras["teams"]`): its name,
description and members (name → agent id). Its task list is the board list named after
it; while a team exists the main agent works on that list too (`extras["active_team"]`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.context import ToolUseContext
from ..tasks.state import shared

TEAMS_KEY = "teams"
LEAD = "lead"


@dataclass(eq=False)
class Team:
    """One team of the session."""

    name: str
    description: str
    members: dict[str, str] = field(default_factory=dict)
    """Member name → agent id."""


class Teams:
    """The teams of one session."""

    def __init__(self) -> None:
        self._teams: dict[str, Team] = {}

    def create(self, name: str, description: str) -> Team:
        if name in self._teams:
            raise ValueError(f"a team named {name!r} exists already")
        team = Team(name, description)
        self._teams[name] = team
        return team

    def get(self, name: str) -> Team | None:
        return self._teams.get(name)

    def join(self, name: str, member: str, agent_id: str) -> None:
        self._teams[name].members[member] = agent_id

    def remove(self, name: str) -> Team:
        return self._teams.pop(name)

    def all(self) -> list[Team]:
        return list(self._teams.values())


def teams(context: ToolUseContext) -> Teams:
    """The session's teams (created on first use)."""
    return shared(context, TEAMS_KEY, Teams)


def team_prompt(context: ToolUseContext, team: Team, name: str) -> str:
    """What a new member is told about its team."""
    from ..agent.prompt import TEAM_NOTE

    others = [m for m in team.members if m != name]
    members = ", ".join([LEAD, *others]) if others else f"{LEAD} (more may join)"
    return TEAM_NOTE.format(
        name=name, team=team.name, description=team.description, members=members
    )
