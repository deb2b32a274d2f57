"""The seam between tools that start subagents and the loop that runs them.

The Agent tool (and SendMessage, TaskStop, the team tools) never import the loop: they
describe a subagent as a `SubagentSpec` and hand it to the `SubagentRunner` they find in
`context.options.subagent_runner`, which the session installs (and which installs one of
its own in every subagent's context, so agents may nest). The runner shares the parent's
model, pipeline (approver, permission engine) and loop settings with the child.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .context import ToolUseContext
    from .conversation import Message
    from .tool import Tool


@dataclass(frozen=True, slots=True)
class SubagentSpec:
    """What a new subagent is: its system prompt, its tools and its context."""

    system_prompt: str
    """Its type's prompt (and team note); it goes before the session's system prompt."""
    tools: Sequence[Tool[Any]]
    """Its tools, already cut down to what its parent may use."""
    context: ToolUseContext
    """Its own context (agent id, abort signal, query depth); app state is the parent's."""
    transcript_path: Path | None = None


def mail_text(mail: Sequence[tuple[str, str]]) -> str:
    """Messages between agents as the receiving agent reads them: one
    ``<message from="sender">`` element per (sender, text), in the order they were sent."""
    return "\n\n".join(f'<message from="{who}">\n{text}\n</message>' for who, text in mail)


class SubagentConversation(Protocol):
    """A running subagent as the tools see it: a conversation that runs prompts."""

    context: ToolUseContext

    @property
    def messages(self) -> list[Message]:
        """The subagent's conversation in the Messages API's format."""
        ...

    async def run(self, prompt: str, *, on_event: Callable[[Any], None] | None = None) -> str:
        """Run `prompt`, then, as follow-up prompts, any mail that came too late for a turn
        of it; returns the last report. `on_event` sees the run's events (the agent
        package's `LoopEvent`s, which the core does not name: they are defined above it)."""
        ...

    def deliver(self, sender: str, text: str) -> None:
        """Mail for this subagent: it joins the conversation between two of its turns, or
        runs as a follow-up prompt when the run was about to end."""
        ...


class SubagentRunner(Protocol):
    """Starts subagents of one agent (the session's main agent, or a subagent)."""

    @property
    def model_id(self) -> str: ...

    def discovered_tools(self) -> frozenset[str]:
        """Deferred tools this agent has loaded through ToolSearch (a child starts with them)."""
        ...

    def start(self, spec: SubagentSpec) -> SubagentConversation:
        """A new subagent conversation (not run yet); its context gets a runner of its own."""
        ...

    def deliver(self, sender: str, text: str) -> None:
        """Mail for the agent this runner belongs to: it joins that agent's conversation at
        its next turn boundary (while it runs), else when its next prompt is sent."""
        ...
