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

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from ..core.conversation import text_block
from ..core.runner import SubagentSpec, mail_text
from .compaction import CompactBoundary
from .events import EventSink, LoopEvent, TurnEnd
from .loop import AgentLoop
from .loop_state import RunResult
from .transcript import Transcript

CONTINUING = ("tool_use", "pause_turn")
"""Stop reasons after which the loop sends another request (mail can join it)."""


class Mailbox:
    """Mail (SendMessage) for the agent of one loop: the one way messages reach an agent.

    Waiting mail joins the conversation between two turns, as `mail_text`. What happens to
    mail that comes after a run's last turn is the `afterwards` choice: the main agent keeps
    it in its conversation for the next prompt (``"wait"``, and mail to an idle main agent
    joins at once); a subagent, which no person prompts, runs it as a follow-up prompt
    (``"follow_up"``, see `SubagentLoop.run`).
    """

    def __init__(self, loop: AgentLoop, *, afterwards: Literal["wait", "follow_up"]) -> None:
        self.loop = loop
        self.afterwards = afterwards
        self.mail: list[tuple[str, str]] = []
        """(sender, text), not delivered yet."""
        loop.sinks.append(self._between_turns)

    def deliver(self, sender: str, text: str) -> None:
        self.mail.append((sender, text))
        if self.afterwards == "wait" and not self.loop.running:
            # Idle: the mail waits in the conversation; the next prompt joins its message.
            self.loop.add_user([text_block(self.take())])

    def take(self) -> str:
        """The waiting mail as one message's text (empty when none), and forget it."""
        mail, self.mail = self.mail, []
        return mail_text(mail)

    def _between_turns(self, event: LoopEvent) -> None:
        if not isinstance(event, TurnEnd) or not self.mail:
            return
        if event.stop_reason in CONTINUING or self.afterwards == "wait":
            self.loop.add_user([text_block(self.take())])


class SubagentLoop(AgentLoop):
    """An `AgentLoop` whose system prompt starts with its agent type's prompt, with a
    mailbox whose late mail runs as follow-up prompts."""

    def __init__(self, *, type_prompt: str, **options: Any) -> None:
        super().__init__(system_head=[text_block(type_prompt)], **options)
        self.mailbox = Mailbox(self, afterwards="follow_up")
        # Its own subagents' runner delivers to this mailbox, so it is made here, once the
        # mailbox exists (the base class would make one with a mailbox of its own).
        runner = LoopRunner(self, mailbox=self.mailbox)
        self.context.options = replace(self.context.options, subagent_runner=runner)

    def deliver(self, sender: str, text: str) -> None:
        self.mailbox.deliver(sender, text)

    async def run(
        self,
        prompt: str,
        *,
        on_event: EventSink[LoopEvent] | None = None,
        notes: Sequence[str] = (),
    ) -> RunResult:
        report = await super().run(prompt, on_event=on_event, notes=notes)
        while self.mailbox.mail:
            report = await super().run(self.mailbox.take(), on_event=on_event)
        return report


class LoopRunner:
    """Starts subagents of `loop`: same model, pipeline (approver, permissions) and settings."""

    def __init__(self, loop: AgentLoop, *, mailbox: Mailbox | None = None) -> None:
        self.loop = loop
        self.mailbox = mailbox or Mailbox(loop, afterwards="wait")
        """Mail for this runner's agent (a subagent's own mailbox, when it is one)."""

    def deliver(self, sender: str, text: str) -> None:
        self.mailbox.deliver(sender, text)

    @property
    def model_id(self) -> str:
        return self.loop.model_id

    def discovered_tools(self) -> frozenset[str]:
        return frozenset(self.loop.discovered_tool_names())

    def start(self, spec: SubagentSpec) -> SubagentLoop:
        parent = self.loop
        transcript = Transcript(spec.transcript_path) if spec.transcript_path else None
        inherited = self.discovered_tools() & {tool.name for tool in spec.tools}
        # The child starts knowing the deferred tools its parent found, the way a
        # conversation keeps them across a compaction: a boundary that carries them.
        carried = CompactBoundary(
            trigger="auto",
            pre_tokens=0,
            messages_summarised=0,
            pre_compact_discovered_tools=tuple(sorted(inherited)),
            summary="",
        )
        return SubagentLoop(
            type_prompt=spec.system_prompt,
            model=parent.model,
            model_id=parent.model_id,
            tools=spec.tools,
            pipeline=parent.pipeline,
            context=spec.context,
            settings=replace(parent.settings),
            transcript=transcript,
            hidden_tools=parent.requests.hidden_tools,
            finder=parent.requests.finder,
            compact_boundaries=[carried] if inherited else [],
        )
