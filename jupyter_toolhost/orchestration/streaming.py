"""The streaming executor: runs the tool calls of one assistant message as they arrive.

Tool_use blocks are added as each finishes streaming; a call starts at once when
`can_execute_tool` allows (nothing executing, or it and every executing call are
concurrency-safe, and fewer than the cap are executing). Unsafe calls keep their place: a
queued unsafe call holds back everything after it. Each call moves queued → executing →
completed → yielded. A group of calls that ran together is a batch; the state changes
they ask for (context modifiers) are applied when the batch is over, in call order.

Stopping: the executor holds a child of the turn's abort signal (the sibling signal) and
gives every call its own child of that. When a call of a tool with
`cancels_siblings_on_error` fails, the sibling signal fires (tools kill their subprocess
groups from its callbacks), the running calls are cancelled and nothing queued starts; the
turn's signal is left alone. `interrupt()` at once answers every call that has not
started (queued, or still in its hooks or permission check — an approval prompt) and
cancels running calls whose tool says "cancel"; running "block" calls may finish.
`discard()` drops calls that have not started. Whatever happens, every added call gets
exactly one result.

A sync tool's thread cannot be cancelled: a stopped sync call is told through its abort
signal and the pipeline answers once the thread returned or after `SYNC_STOP_WAIT_S`,
saying which (its pool thread stays taken until it returns).

A kernel interrupt reaches the task awaiting `results()` as `CancelledError`. The executor
then interrupts, lets running "block" calls finish for up to `interrupt_grace_s` seconds
(3 s by default), emitting a `CallFinishing` countdown each second, and stops them after
that, or at once on a second cancellation (a second interrupt). It re-raises the
`CancelledError` with the results of every call attached: read them with
`interrupted_results(exc)` or `executor.completed_results()`. The grace is for running
"block" calls only; nothing else waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeAlias, cast

from pydantic import BaseModel

from ..core.context import AbortSignal, Progress, ToolUseContext, as_progress
from ..core.tool import Tool
from ..core.types import ToolCall, ToolResult
from .events import (
    NOT_STARTED_BATCH,
    TOOL_EVENT_TYPES,
    CallFinished,
    CallFinishing,
    CallProgress,
    CallQueued,
    CallStarted,
    CallStatus,
    ChildEvent,
    EventSink,
    StopCause,
    ToolEvent,
    emit,
)
from .executor import (
    CallPlan,
    call_context,
    max_tool_use_concurrency,
    plan_call,
    sentence,
    sibling_failed_reason,
    status_of,
    stopped_result,
)
from .pipeline import STILL_RUNNING, SYNC_STOP_WAIT_S, CallHandle, Pipeline

INTERRUPT_GRACE_S = 3.0
"""How long "block" calls may run on after a kernel interrupt before they are cancelled."""
REAP_TIMEOUT_S = 1.0
"""How long `results()` waits for cancelled calls to unwind (normally a few loop ticks)."""
STOP_ANSWER_MARGIN_S = 0.5
"""How much longer than `SYNC_STOP_WAIT_S` a stopped sync call's answer may take."""
USER_INTERRUPT = "interrupted by user"
NOT_STARTED_ON_INTERRUPT = (
    "{message} while its permission was being decided (an approval prompt or a hook): "
    "the call never started"
)
INTERRUPTED_AGAIN = "Interrupted again by user: stopped before it finished"
DISCARDED = "Not run: the message that contained this call was discarded (its stream failed)"
_RESULTS_ATTR = "tool_results"

EntryStatus: TypeAlias = Literal["queued", "executing", "completed", "yielded"]

_log = logging.getLogger(__name__)


def interrupted_results(exc: BaseException) -> list[ToolResult] | None:
    """The results a `CancelledError` raised by `results()`/`run_tools` carries, if any."""
    results = getattr(exc, _RESULTS_ATTR, None)
    return list(cast(list[ToolResult], results)) if isinstance(results, list) else None


@dataclass(eq=False)
class _Entry:
    plan: CallPlan
    status: EntryStatus = "queued"
    signal: AbortSignal | None = None
    task: asyncio.Task[ToolResult] | None = None
    result: ToolResult | None = None
    started_at: float | None = None
    batch: int = NOT_STARTED_BATCH
    modifier_applied: bool = False
    handle: CallHandle = field(default_factory=CallHandle)
    stopping: bool = False
    """A sync call was told to stop; the pipeline answers once its thread returned."""


class StreamingToolExecutor:
    """Runs one assistant message's tool calls, starting each as soon as it may."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        context: ToolUseContext,
        on_event: EventSink[ToolEvent] | None = None,
        max_concurrency: int | None = None,
        interrupt_grace_s: float = INTERRUPT_GRACE_S,
    ) -> None:
        cap = max_tool_use_concurrency() if max_concurrency is None else max_concurrency
        if cap < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {cap}")
        self._pipeline = pipeline
        self._context = context
        self._on_event = on_event
        self._cap = cap
        self._grace = interrupt_grace_s
        self._entries: list[_Entry] = []
        self._batch = NOT_STARTED_BATCH
        self._closed: str | None = None
        """Set once nothing more may start: the message queued and later calls get."""
        self._sibling_failed = False
        self._interrupted = False
        self._stop_cause: StopCause | None = None
        """Why calls are being stopped (the first reason wins), for `CallFinished`."""
        self._finalized = False
        self._answered = asyncio.Event()
        self._answered.set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._siblings = AbortSignal()
        """A child of the turn's signal; detached from it once the message is answered."""
        self._unwatch_parent = context.abort.add_callback(self._parent_aborted)

    # ── the public surface ──────────────────────────────────────────────────────────────

    def add_tool(self, call: ToolCall, *, parsed: BaseModel | None = None) -> None:
        """Queue a tool_use whose block has finished streaming; start it if it may run now.

        `parsed` is its input when the caller has validated it already.
        """
        if self._finalized:
            raise RuntimeError("results() has already answered this message's calls")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        plan = plan_call(call, self._context.options.tools, parsed=parsed)
        self._entries.append(_Entry(plan))
        self._answered.clear()
        self._emit(CallQueued(call, plan.tool_name, plan.concurrency_safe))
        self._process_queue()

    async def results(self) -> list[ToolResult]:
        """Wait for every call; one result per added call, in call order."""
        if self._finalized:
            return self.completed_results()
        try:
            if self._interrupted:
                await self._give_grace()
            await self._answered.wait()
            await self._reap()
        except asyncio.CancelledError as exc:
            await self._settle_after_cancel()
            setattr(exc, _RESULTS_ATTR, self._finalize())
            raise
        return self._finalize()

    def interrupt(self, reason: str = USER_INTERRUPT) -> None:
        """Answer at once every call that has not started (queued, waiting for approval) and
        cancel running calls whose tool says "cancel"; running "block" calls may finish
        (`results()` gives them the grace). Nothing more starts."""
        message = sentence(reason)
        self._interrupted = True
        self._stop_cause = self._stop_cause or "interrupt"
        self._close(f"{message}: the call never started")
        for entry in self._executing():
            phase = entry.handle.phase
            if phase == "preparing":
                self._stop(entry, NOT_STARTED_ON_INTERRUPT.format(message=message))
            elif phase == "calling" and entry.plan.interrupt_behavior == "cancel":
                self._stop(entry, message)
        self._process_queue()

    def discard(self) -> None:
        """The stream failed: calls that have not started never run (they still get results)."""
        self._stop_cause = self._stop_cause or "discarded"
        self._close(DISCARDED)
        self._process_queue()

    @property
    def tools(self) -> Sequence[Tool[Any]]:
        """The pool this message's calls are looked up in (the pipeline's)."""
        return self._context.options.tools

    def completed_results(self) -> list[ToolResult]:
        """The results so far, in call order (after an interrupt: one for every call)."""
        return [entry.result for entry in self._entries if entry.result is not None]

    def status(self, call_id: str) -> EntryStatus | None:
        """Where a call is: queued, executing, completed or yielded (None if unknown)."""
        for entry in self._entries:
            if entry.plan.call.id == call_id:
                return entry.status
        return None

    # ── scheduling ──────────────────────────────────────────────────────────────────────

    def _executing(self) -> list[_Entry]:
        return [entry for entry in self._entries if entry.status == "executing"]

    def _can_execute(self, safe: bool) -> bool:
        executing = self._executing()
        if len(executing) >= self._cap:
            return False
        return not executing or (safe and all(e.plan.concurrency_safe for e in executing))

    def _process_queue(self) -> None:
        for entry in self._entries:
            if entry.status != "queued":
                continue
            if self._closed is not None:
                self._finish(entry, stopped_result(entry.plan, self._closed), "cancelled")
            elif self._can_execute(entry.plan.concurrency_safe):
                self._start(entry)
            elif not entry.plan.concurrency_safe:
                break

    def _start(self, entry: _Entry) -> None:
        assert self._loop is not None
        if not self._executing():
            self._apply_modifiers()
            self._batch += 1
        call = entry.plan.call
        entry.batch = self._batch
        entry.signal = self._siblings.child()
        entry.status = "executing"
        entry.started_at = time.perf_counter()
        context = call_context(
            self._context,
            call,
            abort=entry.signal,
            progress=partial(self._progress, entry),
            on_child_event=partial(self._child_event, entry),
        )
        self._emit(CallStarted(call.id, entry.started_at))
        entry.task = self._loop.create_task(
            self._pipeline.run(call, context, handle=entry.handle, parsed=entry.plan.parsed),
            name=f"tool {entry.plan.tool_name} {call.id}",
        )
        entry.task.add_done_callback(partial(self._task_done, entry))

    def _task_done(self, entry: _Entry, task: asyncio.Task[ToolResult]) -> None:
        outcome: ToolResult | None = None
        failure: BaseException | None = None
        if not task.cancelled():
            failure = task.exception()
            outcome = task.result() if failure is None else None
        if entry.result is not None:
            return  # stopped earlier; what the task did after that is ignored
        status: CallStatus
        if outcome is not None:
            aborted = entry.signal is not None and entry.signal.aborted
            result, status = outcome, status_of(outcome, aborted=aborted)
        elif failure is not None:
            message = f"The orchestrator lost the call: {type(failure).__name__}: {failure}"
            result, status = stopped_result(entry.plan, message), "error"
        else:
            result, status = stopped_result(entry.plan, "Cancelled"), "cancelled"
        self._finish(entry, result, status)
        cancels = entry.plan.cancels_siblings_on_error
        if status == "error" and cancels and not self._sibling_failed:
            self._abort_siblings(entry)
        self._process_queue()

    def _finish(self, entry: _Entry, result: ToolResult, status: CallStatus) -> None:
        if entry.result is not None:
            return
        entry.result = result
        entry.status = "completed"
        duration = 0.0 if entry.started_at is None else time.perf_counter() - entry.started_at
        cause = self._stop_cause if status == "cancelled" else None
        self._emit(CallFinished(entry.plan.call.id, result, duration, status, entry.batch, cause))
        if all(e.result is not None for e in self._entries):
            self._answered.set()

    # ── stopping ────────────────────────────────────────────────────────────────────────

    def _close(self, message: str) -> None:
        if self._closed is None:
            self._closed = message

    def _stop(self, entry: _Entry, message: str) -> None:
        """Abort one running call's signal, cancel its task, and answer it now.

        A sync call whose thread runs is not cancelled: the pipeline answers it once the
        thread returned (or after `SYNC_STOP_WAIT_S`, saying it may still be running).
        """
        if entry.task is not None and entry.task.done():
            self._task_done(entry, entry.task)  # it finished first: keep its real result
            return
        if entry.stopping or entry.result is not None:
            return
        if entry.signal is not None:
            entry.signal.abort(message)
        if entry.handle.phase == "calling" and entry.handle.thread_running:
            entry.stopping = True
            assert self._loop is not None
            wait = SYNC_STOP_WAIT_S + STOP_ANSWER_MARGIN_S
            self._loop.call_later(wait, self._stop_late, entry, message)
            return
        self._cancel(entry, message)

    def _cancel(self, entry: _Entry, message: str) -> None:
        if entry.task is not None:
            entry.task.cancel()
        self._finish(entry, stopped_result(entry.plan, message), "cancelled")

    def _stop_late(self, entry: _Entry, message: str) -> None:
        """A stopped sync call the pipeline did not answer in time: answer it now."""
        if entry.result is None:
            self._cancel(entry, f"{message}. {STILL_RUNNING}")
            self._process_queue()

    def _abort_siblings(self, failed: _Entry) -> None:
        self._sibling_failed = True
        self._stop_cause = self._stop_cause or "sibling"
        reason = sibling_failed_reason(failed.plan)
        self._close(f"Not run: {reason} before this call started")
        self._siblings.abort(reason)
        for entry in self._executing():
            self._stop(entry, f"Cancelled: {reason}")

    def _parent_aborted(self, reason: str) -> None:
        self._siblings.abort(reason)  # thread-safe: tools' kill callbacks fire at once
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            self._stop_everything(reason)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self._stop_everything, reason)

    def _stop_everything(self, reason: str) -> None:
        message = sentence(reason)
        self._stop_cause = self._stop_cause or "interrupt"
        self._close(f"{message}: the call never started")
        for entry in self._executing():
            self._stop(entry, message)
        self._process_queue()

    async def _settle_after_cancel(self) -> None:
        """After a kernel interrupt: interrupt, give running "block" calls their grace
        (none on a second interrupt), and answer every call."""
        again = self._interrupted
        self.interrupt(USER_INTERRUPT)
        if not again:
            try:
                await self._give_grace()
            except asyncio.CancelledError:
                again = True
        if again:
            for entry in self._executing():
                self._stop(entry, INTERRUPTED_AGAIN)
        self._process_queue()
        if not self._answered.is_set():  # stopped sync calls, answered within a second
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                wait = SYNC_STOP_WAIT_S + STOP_ANSWER_MARGIN_S
                await asyncio.wait_for(self._answered.wait(), timeout=wait)
        for entry in self._entries:
            if entry.result is None:
                self._cancel(entry, f"{sentence(USER_INTERRUPT)}. {STILL_RUNNING}")
        with contextlib.suppress(asyncio.CancelledError):
            await self._reap()

    async def _give_grace(self) -> None:
        """Let running "block" calls finish for up to the grace, counting the seconds down
        (`CallFinishing`); stop those still running after it. A cancellation propagates."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._grace
        shown: dict[str, int] = {}
        while True:
            blocking = [e for e in self._executing() if not e.stopping and e.task is not None]
            remaining = deadline - loop.time()
            if not blocking or remaining <= 0:
                break
            seconds = max(1, math.ceil(remaining - 1e-6))
            for entry in blocking:
                if shown.get(entry.plan.call.id) != seconds:
                    shown[entry.plan.call.id] = seconds
                    self._emit(CallFinishing(entry.plan.call.id, seconds))
            step = max(0.001, remaining - (seconds - 1))
            tasks = [e.task for e in blocking if e.task is not None]
            await asyncio.wait(tasks, timeout=step, return_when=asyncio.FIRST_COMPLETED)
        late = f"{sentence(USER_INTERRUPT)}: it did not finish within {self._grace:g} s"
        for entry in self._executing():
            self._stop(entry, late)

    async def _reap(self) -> None:
        """Let cancelled calls unwind (bounded), so no task outlives the message by much."""
        pending = [e.task for e in self._entries if e.task is not None and not e.task.done()]
        if pending:
            await asyncio.wait(pending, timeout=REAP_TIMEOUT_S)

    # ── results, state changes, events ──────────────────────────────────────────────────

    def _finalize(self) -> list[ToolResult]:
        results = self.completed_results()
        assert len(results) == len(self._entries), "every call must have its result"
        if not self._finalized:
            self._finalized = True
            self._unwatch_parent()
            self._apply_modifiers()
            self._pipeline.results.apply_message_budget(results)
            for entry in self._entries:
                entry.status = "yielded"
        return results

    def _apply_modifiers(self) -> None:
        """Apply the state changes of finished calls, in call order, once each."""
        for entry in self._entries:
            if entry.result is None or entry.modifier_applied:
                continue
            entry.modifier_applied = True
            modifier: Any = entry.result.context_modifier
            if not callable(modifier):
                continue
            try:
                modifier(self._context)
            except Exception:
                _log.exception("the context modifier of %s raised", entry.plan.call.id)

    def _progress(self, entry: _Entry, progress: str | Progress) -> None:
        self._on_loop(self._deliver_progress, entry, as_progress(progress))

    def _deliver_progress(self, entry: _Entry, progress: Progress) -> None:
        if entry.status == "executing":
            checklist = progress.checklist
            event = CallProgress(
                call_id=entry.plan.call.id,
                text=str(progress.text),
                fraction=progress.fraction,
                tail=tuple(progress.tail),
                checklist=tuple(checklist) if checklist is not None else None,
                wait=progress.wait,
            )
            self._emit(event)

    def _child_event(self, entry: _Entry, event: object) -> None:
        """A subagent's loop event: its tool-call events go on as this call's `ChildEvent`s
        (the rest, streamed text and the like, stays with the subagent)."""
        if isinstance(event, TOOL_EVENT_TYPES):
            self._on_loop(self._deliver_child, entry, event)

    def _deliver_child(self, entry: _Entry, event: ToolEvent) -> None:
        if entry.status == "executing":
            self._emit(ChildEvent(entry.plan.call.id, event))

    def _on_loop(self, deliver: Callable[..., None], *args: Any) -> None:
        """Run `deliver(*args)` on the executor's loop (now, when called from it)."""
        if threading.get_ident() == self._loop_thread:
            deliver(*args)
        elif self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(deliver, *args)

    def _emit(self, event: ToolEvent) -> None:
        emit(self._on_event, event)
