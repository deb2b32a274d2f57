"""Extended thinking: checking the options, sizing requests, and which blocks must stay.

`Session(thinking=...)` takes the Messages API's own `thinking` object and sends it as it
is; `check_thinking` refuses a malformed one when the session is made, in the API's wording,
so nothing is lost to a 400 later. `context_management` edits (`clear_thinking_20251015`,
`clear_tool_uses_20250919`) are an API beta; `check_context_management` checks them the same
way (the Anthropic model sends the beta header they need).

The rules a conversation with thinking keeps (the API's, found in its 400 answers):
- thinking and redacted_thinking blocks go back byte for byte (`signature`, `data`), at the
  head of their assistant message; the last assistant message of a tool-use chain (the one
  whose tool_results end the conversation) must start with one;
- thinking blocks of earlier, completed turns may be dropped (the API ignores them), which
  `drop_settled_thinking` does for a conversation that is resumed or summarised;
- an assistant message may not end on a thinking block when it is the last message, so a
  response interrupted after its thinking and before anything else is not stored
  (`only_thinking`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from ..core.conversation import Block, Message, add_assistant, add_user, blocks_of
from ..core.errors import ConfigurationError

MIN_BUDGET = 1024
"""The smallest `budget_tokens` the API takes."""
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
CLEAR_THINKING = "clear_thinking_20251015"


class ThinkingConfigError(ConfigurationError, ValueError):
    """A `thinking` or `context_management` option the API would refuse."""


# ── the options, as the API's types (anthropic 2.16) describe them ─────────────────────
# A discriminated union on `type` gives the API's own wording: the tag in the error's
# location ("thinking.enabled.budget_tokens: Field required"), the expected tags listed.

Display = Literal["summarized", "omitted"]


class _Option(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Enabled(_Option):
    type: Literal["enabled"]
    budget_tokens: Annotated[StrictInt, Field(ge=MIN_BUDGET)]
    display: Display | None = None


class _Adaptive(_Option):
    type: Literal["adaptive"]
    display: Display | None = None


class _Disabled(_Option):
    type: Literal["disabled"]


class _BetweenTools(_Option):
    type: Literal["between_tools"]


_THINKING: TypeAdapter[_Enabled | _Adaptive | _Disabled | _BetweenTools] = TypeAdapter(
    Annotated[_Adaptive | _BetweenTools | _Disabled | _Enabled, Field(discriminator="type")]
)


class _Edit(BaseModel):
    """A context edit; its own settings (`keep`, `trigger`, ...) go to the API unchecked."""

    model_config = ConfigDict(extra="allow")


class _ClearThinking(_Edit):
    type: Literal["clear_thinking_20251015"]


class _ClearToolUses(_Edit):
    type: Literal["clear_tool_uses_20250919"]


class _ContextManagement(_Option):
    """Context edits this loop can send. `compact_20260112` (server-side compaction) is
    refused: its `compaction` blocks are not something this loop keeps;
    `compact_threshold_tokens` is the loop's own compaction."""

    edits: Annotated[
        list[Annotated[_ClearThinking | _ClearToolUses, Field(discriminator="type")]],
        Field(strict=True),
    ] = []


_CONTEXT_MANAGEMENT = TypeAdapter(_ContextManagement)

_API_WORDING = {
    "model_attributes_type": "Input should be a valid dictionary",
    "union_tag_not_found": "Field required",
}
"""The API's words where pydantic's differ: a non-object is "not a valid dictionary", and a
missing `type` is a missing field (reported at `.type`)."""


def _refusal(option: str, error: ValidationError) -> ThinkingConfigError:
    """All of a validation's errors, each as "<where>: <what>", in the API's words."""
    return ThinkingConfigError("; ".join(_problem(option, e) for e in error.errors()))


def _problem(option: str, error: ErrorDetails) -> str:
    where = ".".join((option, *(str(part) for part in error["loc"])))
    if error["type"] == "union_tag_not_found":
        where += ".type"
    return f"{where}: {_API_WORDING.get(error['type'], error['msg'])}"


def check_thinking(thinking: object) -> dict[str, Any] | None:
    """`thinking` as a plain dict (None stays None), or `ThinkingConfigError` in the API's words."""
    if thinking is None:
        return None
    config = dict(cast(Mapping[str, Any], thinking)) if isinstance(thinking, Mapping) else None
    if config is not None and config.get("type") is None:
        config.pop("type", None)  # `type: None` is no type at all
    try:
        _THINKING.validate_python(thinking if config is None else config)
    except ValidationError as error:
        raise _refusal("thinking", error) from None
    return config


def thinking_on(thinking: Mapping[str, Any] | None) -> bool:
    """Whether the model may think (`enabled` or `adaptive`; `between_tools` too)."""
    return thinking is not None and thinking.get("type") not in (None, "disabled")


def budget_of(thinking: Mapping[str, Any] | None) -> int:
    """The thinking budget in tokens (0 when there is none)."""
    if thinking is None or thinking.get("type") != "enabled":
        return 0
    return int(thinking.get("budget_tokens") or 0)


def request_max_tokens(max_tokens: int, thinking: Mapping[str, Any] | None) -> int:
    """The `max_tokens` to send: the loop's `max_tokens` plus the thinking budget.

    The API counts thinking against `max_tokens` and requires `budget_tokens < max_tokens`.
    Claude Code instead cuts its budget to one below its output limit (31999 of 32000), so
    a long thought can leave nothing for the answer. Here `max_tokens` keeps meaning the
    room for the visible answer and tool calls, whatever the budget; thinking tokens are
    billed only as they are spent, so the larger cap costs nothing by itself."""
    return max_tokens + budget_of(thinking)


def check_context_management(
    context_management: object, thinking: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """`context_management` as a plain dict (None stays None), or `ThinkingConfigError`.

    Beyond the types, the API wants `clear_thinking` first among the edits, and only with
    thinking on."""
    if context_management is None:
        return None
    config = (
        dict(cast(Mapping[str, Any], context_management))
        if isinstance(context_management, Mapping)
        else None
    )
    try:
        checked = _CONTEXT_MANAGEMENT.validate_python(
            context_management if config is None else config
        )
    except ValidationError as error:
        raise _refusal("context_management", error) from None
    for index, edit in enumerate(checked.edits):
        if isinstance(edit, _ClearThinking) and index != 0:
            raise ThinkingConfigError(
                f"context_management.edits.{index}: `{CLEAR_THINKING}` must be the first "
                "strategy in `edits`"
            )
        if isinstance(edit, _ClearThinking) and not thinking_on(thinking):
            raise ThinkingConfigError(
                f"`{CLEAR_THINKING}` strategy requires `thinking` to be enabled"
            )
    return config


# ── blocks ─────────────────────────────────────────────────────────────────────────────


def is_thinking(block: Mapping[str, Any]) -> bool:
    """A thinking or redacted_thinking block."""
    return block.get("type") in THINKING_BLOCKS


def only_thinking(blocks: Sequence[Block]) -> bool:
    """Blocks with nothing but thinking in them (a response cut right after its thought)."""
    return bool(blocks) and all(is_thinking(block) for block in blocks)


def in_tool_chain(messages: Sequence[Message]) -> int | None:
    """The index of the assistant message whose tool_results end the conversation (the one
    the API requires to start with a thinking block), or None when no chain is open."""
    if len(messages) < 2 or messages[-1].get("role") != "user":
        return None
    last = blocks_of(messages[-1])
    if not any(block.get("type") == "tool_result" for block in last):
        return None
    return len(messages) - 2 if messages[-2].get("role") == "assistant" else None


def thought_missing(messages: Sequence[Message]) -> bool:
    """Whether the open tool-use chain began without a thought: its assistant message does
    not start with a thinking block, so the API refuses a request with thinking on until the
    chain ends (thinking was turned on in the middle of it, e.g. after an interrupt)."""
    chain = in_tool_chain(messages)
    if chain is None:
        return False
    blocks = blocks_of(messages[chain])
    return not (blocks and is_thinking(blocks[0]))


def without_thinking_edits(context_management: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`context_management` less its `clear_thinking` edit (the API takes that edit only
    with thinking on); None when no edit is left."""
    if context_management is None:
        return None
    edits = [e for e in context_management.get("edits", ()) if e.get("type") != CLEAR_THINKING]
    return {**context_management, "edits": edits} if edits else None


def drop_settled_thinking(messages: Sequence[Message]) -> list[Message]:
    """The conversation without the thinking blocks of completed turns (the API allows
    dropping them; it needs only the open tool-use chain's). Every assistant message from
    the last real user prompt on keeps its blocks untouched; an earlier message left empty
    goes, and its neighbours are joined so roles still alternate."""
    keep_from = _turn_start(messages)
    result: list[Message] = []
    for index, message in enumerate(messages):
        blocks = blocks_of(message)
        if message.get("role") == "assistant" and index < keep_from:
            blocks = [block for block in blocks if not is_thinking(block)]
            if not blocks:
                continue
            add_assistant(result, blocks)
        elif message.get("role") == "assistant":
            add_assistant(result, blocks)
        else:
            add_user(result, blocks)
    return result


def _turn_start(messages: Sequence[Message]) -> int:
    """Where the running turn starts: after the last user message that is not just tool
    results (a real prompt); len(messages) when the conversation is not in a tool chain."""
    if in_tool_chain(messages) is None:
        return len(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        blocks = blocks_of(message)
        if not any(block.get("type") == "tool_result" for block in blocks):
            return index + 1
    return 0
