"""The loop's side of the subagent seam: `LoopRunner` starts child `AgentLoop`s.

The session installs a `LoopRunner` bound to its loop as `context.options.subagent_runner`;
each child it starts gets a runner bound to the child, so a subagent's own subagents take
their tools, discoveries and depth from it, not from the session.

A child thinks as its parent does: it starts with a copy of the parent's loop settings,
`thinking` and `context_management` included (agent type files have no thinking option;
a parent's `settings.thinking` changed later does not reach a child already started).
Its thinking blocks live in its own conversation and never reach the parent's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.conversation import text_block
from ..core.runner import SubagentSpec
from ..model.base import ModelRequest
from .compaction import CompactBoundary
from .events import LoopEvent, TurnEnd
from .loop import AgentLoop
from .transcript import Transcript


class SubagentLoop(AgentLoop):
    """An `AgentLoop` whose system prompt starts with its agent type's prompt."""

    def __init__(self, *, type_prompt: str, **options: Any) -> None:
        super().__init__(**options)
        self.type_prompt = type_prompt

    def request(self, *args: Any, **kwargs: Any) -> ModelRequest:
        request = super().request(*args, **kwargs)
        return replace(request, system=[text_block(self.type_prompt), *request.system])


class LoopRunner:
    """Starts subagents of `loop`: same model, pipeline (approver, permissions) and settings."""

    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop
        self.mail: list[tuple[str, str]] = []
        """(sender, text) for this runner's agent, not delivered yet."""
        loop.sinks.append(self._carry_mail)

    def deliver(self, sender: str, text: str) -> None:
        self.mail.append((sender, text))
        if not self.loop.running:
            # Idle: the mail waits in the conversation; the next prompt joins its message.
            self.loop.add_user([text_block(self.take_mail())])

    def take_mail(self) -> str:
        """The waiting mail as message blocks' text (empty when none), and forget it."""
        mail, self.mail = self.mail, []
        return "\n\n".join(f'<message from="{who}">\n{text}\n</message>' for who, text in mail)

    def _carry_mail(self, event: LoopEvent) -> None:
        # After any turn: it joins the tool_results of a turn that goes on, or, after the
        # last turn of a prompt, waits in the conversation for the next prompt to join it.
        if isinstance(event, TurnEnd) and self.mail:
            self.loop.add_user([text_block(self.take_mail())])

    @property
    def model_id(self) -> str:
        return self.loop.model_id

    def discovered_tools(self) -> frozenset[str]:
        return frozenset(self.loop.discovered_tool_names())

    def start(self, spec: SubagentSpec) -> SubagentLoop:
        parent = self.loop
        transcript = Transcript(spec.transcript_path) if spec.transcript_path else None
        child = SubagentLoop(
            type_prompt=spec.system_prompt,
            model=parent.model,
            model_id=parent.model_id,
            tools=spec.tools,
            pipeline=parent.pipeline,
            context=spec.context,
            settings=replace(parent.settings),
            transcript=transcript,
        )
        inherited = self.discovered_tools() & {tool.name for tool in spec.tools}
        if inherited:
            # The child starts knowing the deferred tools its parent found, the way a
            # conversation keeps them across a compaction: a boundary that carries them.
            child.compact_boundaries.append(
                CompactBoundary(
                    trigger="auto",
                    pre_tokens=0,
                    messages_summarised=0,
                    pre_compact_discovered_tools=tuple(sorted(inherited)),
                    summary="",
                )
            )
        spec.context.options = replace(spec.context.options, subagent_runner=LoopRunner(child))
        return child
