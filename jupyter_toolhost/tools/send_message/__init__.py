"""SendMessage: a follow-up to a subagent (it runs again and replies) or mail to a busy one.

Idle agents run the message at once and their reply is the result; busy ones get it in
their mailbox, delivered between two of their turns. Senders are named by their agent
name, their id, or `lead` for the main agent.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.runner import mail_text
from ...core.tool import Tool, build_tool, no_permission_needed
from ...core.types import ToolInputError
from ..agent import subagents as agents
from ..agent.prompt import FOOTER
from ..agent.subagents import LEAD, Subagent
from ..tasks import board
from .prompt import DESCRIPTION, NAME


class SendMessageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(description='An agent id, a teammate\'s name, or "*" for the team.')
    message: str = Field(description="The message.")
    summary: str | None = Field(default=None, description="A few words shown to the user.")


def _sender(context: ToolUseContext) -> str:
    if context.agent_id is None:
        return LEAD
    me = agents.subagents(context).get(context.agent_id)
    return me.label if me is not None else context.agent_id


async def send_message(input: SendMessageInput, context: ToolUseContext) -> str:
    if not input.message.strip():
        raise ToolInputError("The message is empty.")
    registry = agents.subagents(context)
    team = board.list_name(context)
    team = None if team == board.DEFAULT_LIST else team
    sender = _sender(context)
    if input.to == "*":
        if team is None:
            raise ToolInputError('"*" sends to a team, and this agent is in none.')
        targets = [a for a in registry.team_members(team) if a.id != context.agent_id]
        if not targets:
            raise ToolInputError(f"Team {team} has no other members yet.")
        for target in targets:
            target.deliver(sender, input.message)
        return f"Message queued for {', '.join(t.label for t in targets)}."
    if input.to == LEAD and context.agent_id is not None and registry.lead is not None:
        registry.lead.deliver(sender, input.message)
        return "Message sent to the lead; it reaches the lead at its next step."
    target = registry.find(input.to, team=team)
    if target is None:
        known = ", ".join(f"{a.label} ({a.id})" for a in registry.all()) or "none"
        raise ToolInputError(f"No agent {input.to!r}. Agents of this session: {known}.")
    if target.id == context.agent_id:
        raise ToolInputError("An agent cannot send a message to itself.")
    if target.abort.aborted:
        raise ToolInputError(f"Agent {target.label} was stopped and takes no more messages.")
    if target.busy:
        target.deliver(sender, input.message)
        return f"Agent {target.label} is working; the message will reach it at its next step."
    return await _follow_up(target, sender, input.message, context)


async def _follow_up(target: Subagent, sender: str, text: str, context: ToolUseContext) -> str:
    prompt = mail_text([(sender, text)])
    report = await agents.run(target, prompt, abort=context.abort)
    reply = report.strip() or "(no reply)"
    return f"Reply from {target.label}:\n{reply}" + FOOTER.format(id=target.id)


def make_tool() -> Tool[SendMessageInput]:
    """A fresh SendMessage tool."""
    return build_tool(
        name=NAME,
        check_permissions=no_permission_needed,
        input_model=SendMessageInput,
        call=send_message,
        description=DESCRIPTION,
        render_tool_use=lambda input: f"to {input.to}: {input.summary or input.message}",
        search_hint="message a subagent or teammate follow up",
    )


TOOL = make_tool()
