"""The events a session reports while it runs: plain data for front ends to render.

Tool call events are the orchestrator's own (`ToolCallQueued` is `CallQueued`, and so on;
`ChildEvent` carries a subagent's tool call events, labelled with the Agent call that
started it); the rest are the loop's: streamed text and thinking, permission requests,
retries and notices, usage, compaction and the end of each model turn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..model.base import Usage
from ..orchestration.events import CallFinished as ToolCallFinished
from ..orchestration.events import CallFinishing as ToolCallFinishing
from ..orchestration.events import CallProgress as ToolCallProgress
from ..orchestration.events import CallQueued as ToolCallQueued
from ..orchestration.events import CallStarted as ToolCallStarted
from ..orchestration.events import ChildEvent as ChildEvent
from ..orchestration.events import EventSink as EventSink
from ..orchestration.events import emit as emit
from ..permissions.api import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from .compaction import CompactBoundary

__all__ = [
    "ChildEvent",
    "Compacted",
    "EventSink",
    "LoopEvent",
    "Notice",
    "PermissionAnswered",
    "PermissionRequested",
    "ResultSize",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingStarted",
    "ToolCallFinished",
    "ToolCallFinishing",
    "ToolCallProgress",
    "ToolCallQueued",
    "ToolCallStarted",
    "TurnEnd",
    "UsageReported",
    "emit",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingStarted:
    """A thinking block (or, `redacted`, a redacted_thinking block) began in this model turn.

    With ``display: "omitted"`` no `ThinkingDelta` follows: the model thinks, the text is
    not sent."""

    redacted: bool


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's thinking text, as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class PermissionRequested:
    """A call waits for a person's (or an approver's) decision."""

    request: ApprovalRequest
    asked_at: float = field(default_factory=time.perf_counter)
    """When it was asked (a `time.perf_counter()` value, as call start times are)."""


@dataclass(frozen=True, slots=True)
class PermissionAnswered:
    """The approver answered a `PermissionRequested` (each gets exactly one of these).

    `decision` is None when the prompt ended without an answer (an interrupt, or the
    approver raised). `asked_at` and `answered_at` are `time.perf_counter()` values: the
    call waited for a person between them.
    """

    request: ApprovalRequest
    decision: ApprovalDecision | None
    asked_at: float
    answered_at: float


NoticeKind: TypeAlias = Literal[
    "budget",
    "retry",
    "max_tokens",
    "refusal",
    "limit",
    "stream",
    "compaction",
    "hook",
    "settings",
    "queued",
    "storage",
    "thinking",
    "mcp",
    "cache",
    "cleared",
]
"""``cache``: the prompt cache expired during a pause, and this much was written again.
``cleared``: old tool results were replaced by notes naming their saved copies.
``thinking``: thinking is on but this request goes without it (see `AgentLoop.request`).
``hook``: a hook failed, blocked a prompt, or stopped or continued the agent.
``settings``: a settings file changed on disk after the session started (not applied).
``queued``: a prompt arrived while another ran, so it waits for that one to end (told to
the running prompt's sinks and the new one's), or a waiting prompt has started.
``storage``: the transcript could not be written (the conversation goes on in memory).
``mcp``: an MCP server's name was changed for its tool names and rules (told once)."""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should be told that is not the model's text."""

    kind: NoticeKind
    text: str


@dataclass(frozen=True, slots=True)
class UsageReported:
    """Tokens of one model response, with the run's and the session's running totals.

    Costs are estimates in USD; None when the model is not in the price table.
    """

    usage: Usage
    run_usage: Usage
    session_usage: Usage
    run_cost_usd: float | None
    session_cost_usd: float | None


@dataclass(frozen=True, slots=True)
class ResultSize:
    """What one tool result adds to the conversation, in tokens (`result_tokens`).

    `measured`: taken from the usage of the request that first carried it; else estimated
    from its size (about four characters a token, an image width × height / 750)."""

    tool_use_id: str
    tokens: int
    measured: bool
    images: tuple[tuple[int, int], ...] = ()
    """The (width, height) in px of each image the result sent."""


@dataclass(frozen=True, slots=True)
class Compacted:
    """Older turns were replaced by a summary."""

    boundary: CompactBoundary


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """One model response is handled; `turn` counts from 1 within the run."""

    turn: int
    stop_reason: str | None


LoopEvent: TypeAlias = (
    TextDelta
    | ThinkingStarted
    | ThinkingDelta
    | ToolCallQueued
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinishing
    | ToolCallFinished
    | ChildEvent
    | PermissionRequested
    | PermissionAnswered
    | Notice
    | UsageReported
    | ResultSize
    | Compacted
    | TurnEnd
)
