"""Compaction: replacing older turns with a summary the model writes.

When the context a request used passes a threshold (or on `session.compact()`), the whole
conversation is sent once more with an instruction to summarise it (tools still defined,
`tool_choice` none), and the conversation becomes a single user message holding that
summary. A `CompactBoundary` records it. The API has no role for such a record, so it is
never sent: the session keeps it in `session.compact_boundaries` and in the transcript,
with the names of the tools discovered before compaction (`pre_compact_discovered_tools`),
which must stay loaded for as long as the conversation relies on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..core.conversation import Message, add_assistant, add_user, text_block, text_of
from ..model.base import BlockComplete, MessageComplete, Model, ModelError, ModelRequest, Usage
from ..model.thinking import drop_settled_thinking

CompactTrigger: TypeAlias = Literal["auto", "manual"]

SUMMARY_INSTRUCTION = (
    "Summarise this conversation so that the work can continue without it. Include: the "
    "user's requests and intent, the key facts found (file names, values, errors and how "
    "they were fixed), what has been done, what is pending and the next step. Reply with "
    "the summary only, as plain text; do not call any tool."
)
SUMMARY_PREFIX = (
    "This session continues from an earlier conversation that was compacted. Summary of it:\n\n"
)
CONTINUE_NOTE = "\n\nContinue from where it left off, without asking the user again."


@dataclass(frozen=True, slots=True)
class CompactBoundary:
    """Where older turns were replaced by a summary, and what was known then."""

    trigger: CompactTrigger
    pre_tokens: int
    """The context size (tokens) of the last request before compaction (0 if unknown)."""
    messages_summarised: int
    pre_compact_discovered_tools: tuple[str, ...]
    summary: str

    def to_record(self, messages: Sequence[Message]) -> dict[str, Any]:
        """The transcript record, with the conversation as it stands after compaction."""
        return {
            "type": "compact_boundary",
            "trigger": self.trigger,
            "pre_tokens": self.pre_tokens,
            "messages_summarised": self.messages_summarised,
            "pre_compact_discovered_tools": list(self.pre_compact_discovered_tools),
            "summary": self.summary,
            "messages": list(messages),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> CompactBoundary:
        return cls(
            trigger="manual" if record.get("trigger") == "manual" else "auto",
            pre_tokens=int(record.get("pre_tokens") or 0),
            messages_summarised=int(record.get("messages_summarised") or 0),
            pre_compact_discovered_tools=tuple(record.get("pre_compact_discovered_tools", [])),
            summary=str(record.get("summary", "")),
        )


def summary_messages(messages: Sequence[Message]) -> list[Message]:
    """The conversation plus the summary instruction, still valid for the API. It is sent
    without thinking, so settled turns' thinking blocks are left out (an open tool-use
    chain keeps its own, untouched)."""
    asking = drop_settled_thinking(messages)
    add_user(asking, [text_block(SUMMARY_INSTRUCTION)])
    return asking


def compacted_conversation(summary: str, *, continuing: bool) -> list[Message]:
    """The conversation after compaction: one user message with the summary."""
    note = CONTINUE_NOTE if continuing else ""
    return [{"role": "user", "content": [text_block(SUMMARY_PREFIX + summary.strip() + note)]}]


async def summarise(model: Model, request: ModelRequest) -> tuple[str, Usage, str]:
    """Ask the model for the summary; returns (summary, usage, model id)."""
    blocks: list[dict[str, Any]] = []
    final = None
    async for event in model.stream(request):
        if isinstance(event, BlockComplete):
            blocks.append(event.block)
        elif isinstance(event, MessageComplete):
            final = event.message
    if final is None:
        raise ModelError("the summary response ended without a complete message")
    collected: list[Message] = []
    add_assistant(collected, final.content or blocks)
    summary = text_of(collected[0]["content"]) if collected else ""
    if not summary.strip():
        raise ModelError("the model returned an empty summary")
    return summary, final.usage, final.model or request.model
