"""Subagents: child conversations of a session, their registry, mailboxes and runs.

A subagent is a conversation of its own (its transcript under
`.toolhost/sessions/<session>/subagents/<id>.jsonl`, a system prompt for its type, a tool
subset) started by the `SubagentRunner` in `context.options.subagent_runner`, which the
session installs: it shares its parent's model client, pipeline (so its permission asks go
to the same approver, labelled with its `agent_id`) and app state (permission rules and
mode, task list, background tasks). It gets only what its parent may use: the parent's own
pool (after deny rules), less main-agent-only tools, cut to its type's list, and starts
with the deferred tools its parent discovered. Runs of one subagent never overlap; a
message sent to a running subagent waits in its mailbox and is delivered between two of
its turns (or as a follow-up run when it was about to stop).
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ...core.context import AbortSignal, FileStateCache, ToolUseContext, ToolUseOptions
from ...core.runner import SubagentConversation, SubagentRunner, SubagentSpec
from ...core.tool import Tool
from ...core.types import ToolError
from ..tasks.state import shared
from .agent_types import AgentType

MAIN_ONLY_FLAG = "main_agent_only"
"""`Tool.extras[MAIN_ONLY_FLAG]`: the tool changes session-wide state (the permission mode,
the working directory, teams, further agents) and is not given to subagents."""
REGISTRY_KEY = "subagents"
MAX_DEPTH = 3
LEAD = "lead"

AgentStatus: TypeAlias = Literal["running", "idle", "failed", "stopped"]


@dataclass(eq=False)
class Subagent:
    """One subagent of the session."""

    id: str
    agent_type: str
    description: str
    loop: SubagentConversation
    name: str | None = None
    transcript_path: Path | None = None
    team: str | None = None
    status: AgentStatus = "idle"
    last_report: str = ""
    runs: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    abort: AbortSignal = field(default_factory=AbortSignal, repr=False)
    """Fired to stop the subagent for good (TaskStop, TeamDelete)."""

    @property
    def label(self) -> str:
        return self.name or self.id

    @property
    def busy(self) -> bool:
        """Running, or started in the background and about to run (mail then waits)."""
        return self.lock.locked() or self.status == "running"

    def deliver(self, sender: str, text: str) -> None:
        """Mail for this subagent (its conversation's mailbox)."""
        self.loop.deliver(sender, text)


class Subagents:
    """The subagents of one session, by id."""

    def __init__(self) -> None:
        self._agents: dict[str, Subagent] = {}
        self._ids = itertools.count(1)
        self.lead: SubagentRunner | None = None
        """The main agent's runner (mail to `lead` goes through it); set on the first
        subagent the main agent starts."""

    def new_id(self) -> str:
        return f"agent_{next(self._ids)}_{secrets.token_hex(2)}"

    def add(self, agent: Subagent) -> None:
        self._agents[agent.id] = agent

    def get(self, agent_id: str) -> Subagent | None:
        return self._agents.get(agent_id)

    def all(self) -> list[Subagent]:
        return list(self._agents.values())

    def find(self, target: str, *, team: str | None = None) -> Subagent | None:
        """An agent by id, else by name (within `team` first)."""
        if target in self._agents:
            return self._agents[target]
        named = [a for a in self._agents.values() if a.name == target]
        in_team = [a for a in named if team is not None and a.team == team]
        return (in_team or named or [None])[-1]

    def team_members(self, team: str) -> list[Subagent]:
        return [a for a in self._agents.values() if a.team == team]


def subagents(context: ToolUseContext) -> Subagents:
    """The session's subagent registry (created on first use)."""
    return shared(context, REGISTRY_KEY, Subagents)


def runner_of(context: ToolUseContext) -> SubagentRunner:
    runner = context.options.subagent_runner
    if runner is None:
        raise ToolError(
            "Subagents are not available here: this session provides no subagent runner "
            "(context.options.subagent_runner)."
        )
    return runner


def subagent_tools(pool: Sequence[Tool[Any]], agent_type: AgentType) -> list[Tool[Any]]:
    """The tools a subagent of `agent_type` gets from `pool`, its parent's own pool (what the
    parent may use now: deny rules that remove a tool whole are already applied).

    Main-agent-only tools are never given; a type's `tools` list only narrows the pool
    (a name the parent does not have gives nothing)."""
    allowed = [t for t in pool if not t.extras.get(MAIN_ONLY_FLAG)]
    if agent_type.tools:
        wanted = set(agent_type.tools)
        allowed = [t for t in allowed if t.name in wanted]
    return allowed


def create(
    context: ToolUseContext,
    *,
    agent_type: AgentType,
    description: str,
    cwd: Path,
    name: str | None = None,
    team: str | None = None,
    team_prompt: str = "",
    background: bool = False,
) -> Subagent:
    """Make (but do not run) a subagent of the session that `context` belongs to."""
    if context.query_tracking.depth >= MAX_DEPTH:
        raise ToolError(f"Subagents may nest at most {MAX_DEPTH} deep.")
    runner = runner_of(context)
    registry = subagents(context)
    if context.agent_id is None:
        registry.lead = runner
    agent_id = registry.new_id()
    tools = subagent_tools(context.options.tools, agent_type)
    extras = {**context.options.extras}
    if team is not None:
        extras["team_name"] = team
    child_context = ToolUseContext(
        options=ToolUseOptions(
            tools=tuple(tools),
            main_loop_model=runner.model_id,
            mcp_clients=context.options.mcp_clients,
            extras=extras,
            # The session's own sandbox settings and redactor, not fresh defaults: the
            # subagent's commands are fenced and its results redacted as the lead's are.
            sandbox=context.options.sandbox,
            redactor=context.options.redactor,
        ),
        app_state=context.app_state,
        read_file_state=FileStateCache(),
        abort=AbortSignal() if background else context.abort.child(),
        cwd=cwd,
        session_id=context.session_id,
        agent_id=agent_id,
        query_tracking=context.query_tracking.child(),
    )
    transcript_path = context.session_dir() / "subagents" / f"{agent_id}.jsonl"
    prompt = agent_type.system_prompt + (f"\n\n{team_prompt}" if team_prompt else "")
    loop = runner.start(
        SubagentSpec(
            system_prompt=prompt,
            tools=tuple(tools),
            context=child_context,
            transcript_path=transcript_path,
        )
    )
    agent = Subagent(
        id=agent_id,
        agent_type=agent_type.name,
        description=description,
        loop=loop,
        name=name,
        team=team,
        transcript_path=transcript_path,
    )
    registry.add(agent)
    return agent


async def run(
    agent: Subagent,
    prompt: str,
    *,
    abort: AbortSignal | None = None,
    on_event: Callable[[Any], None] | None = None,
) -> str:
    """Run `prompt` in the subagent, then any mail that came too late for a turn; returns
    its last report. `abort` (the calling call's signal) cancels the run when it fires;
    `on_event` (the calling call's `context.on_child_event`) sees the run's events."""
    async with agent.lock:
        agent.status = "running"
        agent.runs += 1
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        signals = [s for s in (abort, agent.abort) if s is not None]
        removers = [s.add_callback(_canceller(loop, task)) for s in signals]
        try:
            report = await agent.loop.run(prompt, on_event=on_event)  # and late mail after it
        except asyncio.CancelledError:
            agent.status = "stopped"
            raise
        except Exception:
            agent.status = "failed"
            raise
        finally:
            for remove in removers:
                remove()
        agent.status = "idle"
        agent.last_report = str(report)
        return agent.last_report


def _canceller(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> Any:
    def cancel(_reason: str) -> None:
        if task is not None:
            loop.call_soon_threadsafe(task.cancel)

    return cancel
