"""The events the orchestrator emits while it runs tool calls: plain data for front ends.

A call is queued, started, may report progress, and finishes exactly once. Front ends
(a notebook cell, a terminal, a test) render them; the orchestrator knows nothing about how.
The calls of a subagent that a call started arrive wrapped in `ChildEvent`s of that call
(nested once per level). Times are `time.perf_counter()` values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar

from ..core.context import ChecklistItem, PersonWait
from ..core.types import ToolCall, ToolResult

CallStatus: TypeAlias = Literal["ok", "error", "cancelled", "denied"]
StopCause: TypeAlias = Literal["sibling", "interrupt", "discarded"]
"""Why a call was cancelled: a sibling that cancels its siblings on error failed; an
interrupt (a kernel interrupt, `interrupt()`, or the turn or the sub-agent's parent call was
stopped); the message's stream failed before the call started."""

NOT_STARTED_BATCH = -1
"""The `batch` of a `CallFinished` whose call never started (interrupted, discarded, ...)."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CallQueued:
    """A tool_use block reached the orchestrator; it will run when its turn comes."""

    call: ToolCall
    tool_name: str
    concurrency_safe: bool


@dataclass(frozen=True, slots=True)
class CallStarted:
    """The call left the queue and entered the pipeline."""

    call_id: str
    started_at: float


@dataclass(frozen=True, slots=True)
class CallProgress:
    """Progress a running tool reported with `context.progress(...)` (see `Progress`)."""

    call_id: str
    text: str
    fraction: float | None = None
    """How much is done, 0.0 to 1.0, when the tool knows."""
    tail: tuple[str, ...] = ()
    """The last lines of the call's output so far."""
    checklist: tuple[ChecklistItem, ...] | None = None
    """The whole checklist the call reported (None: none reported)."""
    wait: PersonWait | None = None
    """A wait for a person began (`answered_at` None) or ended."""


@dataclass(frozen=True, slots=True)
class CallFinishing:
    """After an interrupt, a running "block" call is let finish: `remaining_s` (whole
    seconds) of its grace are left. Sent once per second; then it finishes or is stopped."""

    call_id: str
    remaining_s: int


@dataclass(frozen=True, slots=True)
class CallFinished:
    """The call has its one tool_result.

    `batch` numbers the groups of calls that ran together, from 0, in the order they ran;
    it is `NOT_STARTED_BATCH` for a call that never started. `duration_s` is 0.0 then.
    """

    call_id: str
    result: ToolResult
    duration_s: float
    status: CallStatus
    batch: int
    stopped_by: StopCause | None = None
    """Why a "cancelled" call was stopped (None for every other status)."""


@dataclass(frozen=True, slots=True)
class ChildEvent:
    """A tool event of a subagent that the call `parent_call_id` started (an Agent call),
    as it happens; a deeper subagent's events come as a `ChildEvent` inside `event`."""

    parent_call_id: str
    event: ToolEvent


ToolEvent: TypeAlias = (
    CallQueued | CallStarted | CallProgress | CallFinishing | CallFinished | ChildEvent
)
TOOL_EVENT_TYPES = (CallQueued, CallStarted, CallProgress, CallFinishing, CallFinished, ChildEvent)
"""The classes of `ToolEvent`, for `isinstance` checks."""
EventT = TypeVar("EventT")
EventSink: TypeAlias = Callable[[EventT], None]
"""A front end's callback for one kind of event: `EventSink[ToolEvent]` here, the session's
`EventSink[LoopEvent]` (which tool events are part of)."""


def emit(sinks: EventSink[EventT] | Iterable[EventSink[EventT]] | None, event: EventT) -> None:
    """Hand `event` to one sink or to each of several; a sink that raises is logged and never
    stops the calls or the run."""
    if sinks is None:
        return
    for sink in (sinks,) if callable(sinks) else sinks:
        try:
            sink(event)
        except Exception:
            _log.exception("an on_event handler raised on %s", type(event).__name__)
