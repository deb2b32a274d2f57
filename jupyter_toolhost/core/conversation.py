"""Keeping a conversation valid for the Messages API, whatever happened to the run.

The rules the API enforces: the first message is the user's, roles alternate, and every
tool_use of an assistant message is answered by exactly one tool_result at the head of the
next user message. `add_user` joins a user message that would follow another (the prompt
after an interrupt goes after the tool_result blocks), `add_assistant` continues an
assistant message that would follow another (after `pause_turn`), and `repair` restores
the rules on a conversation read back from a transcript that ended mid-turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .error_results import error_content

Block = dict[str, Any]
Message = dict[str, Any]

UNANSWERED = "Not run: the session ended before this call finished"


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def blocks_of(message: Message) -> list[Block]:
    """A message's content as a list of blocks (a plain string becomes one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [text_block(content)] if content else []
    return list(content or [])


def tool_uses(blocks: Sequence[Block]) -> list[Block]:
    return [block for block in blocks if block.get("type") == "tool_use"]


def text_of(blocks: Sequence[Block]) -> str:
    """The text blocks of a message, joined."""
    return "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def add_user(messages: list[Message], blocks: Sequence[Block]) -> None:
    """Append user content, joining the last message when it is the user's already."""
    if not blocks:
        return
    if messages and messages[-1]["role"] == "user":
        messages[-1] = {"role": "user", "content": [*blocks_of(messages[-1]), *blocks]}
    else:
        messages.append({"role": "user", "content": list(blocks)})


def add_assistant(messages: list[Message], blocks: Sequence[Block]) -> None:
    """Append assistant content, continuing the last message when it is the assistant's."""
    if not blocks:
        return
    if messages and messages[-1]["role"] == "assistant":
        messages[-1] = {"role": "assistant", "content": [*blocks_of(messages[-1]), *blocks]}
    else:
        messages.append({"role": "assistant", "content": list(blocks)})


def storable(blocks: Sequence[Block]) -> list[Block]:
    """Blocks the API accepts back: empty text blocks are dropped. Nothing else is touched:
    thinking and redacted_thinking blocks keep their place and every byte (an empty-text
    thinking block with a signature, from ``display: "omitted"``, included)."""
    return [b for b in blocks if not (b.get("type") == "text" and not b.get("text"))]


def error_result(tool_use_id: str, message: str) -> Block:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": error_content(message),
        "is_error": True,
    }


def repair(messages: Sequence[Message]) -> list[Message]:
    """A valid conversation from one that may break the rules (e.g. read from a transcript).

    Same-role neighbours are merged, a leading assistant message is dropped, tool_results
    move to the head of their message, unanswered tool_uses get an is_error result and
    tool_results that answer nothing are dropped. Assistant blocks, thinking blocks among
    them, are never dropped, reordered or edited.
    """
    merged: list[Message] = []
    for message in messages:
        blocks = storable(blocks_of(message))
        if not blocks or (not merged and message["role"] != "user"):
            continue
        (add_user if message["role"] == "user" else add_assistant)(merged, blocks)
    repaired: list[Message] = []
    for index, message in enumerate(merged):
        if message["role"] == "assistant":
            repaired.append(message)
            continue
        previous = merged[index - 1] if index else None
        expected = [b["id"] for b in tool_uses(blocks_of(previous))] if previous else []
        repaired.append({"role": "user", "content": _answer(blocks_of(message), expected)})
    last = repaired[-1] if repaired else None
    if last is not None and last["role"] == "assistant":
        pending = [b["id"] for b in tool_uses(blocks_of(last))]
        if pending:
            repaired.append({"role": "user", "content": _answer([], pending)})
    return repaired


def _answer(blocks: list[Block], expected: list[str]) -> list[Block]:
    results = {b.get("tool_use_id"): b for b in blocks if b.get("type") == "tool_result"}
    head = [results.get(use_id) or error_result(use_id, UNANSWERED) for use_id in expected]
    rest = [b for b in blocks if b.get("type") != "tool_result"]
    return [*head, *rest] or [text_block("(continue)")]
