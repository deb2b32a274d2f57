"""Sync `@tool` functions: the thread pool they run on, and how they are stopped.

Plain asyncio, the real pipeline and executor, real threads and files. Timings are asserted
with generous bounds and printed (`pytest -s` shows them).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from orchestration_support import make_context

from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool, tool
from jupyter_toolhost.core.types import PermissionAllow, PermissionResult, ToolCall, ToolResult
from jupyter_toolhost.orchestration.batches import run_tools
from jupyter_toolhost.orchestration.concurrency import CONCURRENCY_ENV, sync_tool_pool
from jupyter_toolhost.orchestration.events import CallFinishing, ToolEvent
from jupyter_toolhost.orchestration.pipeline import STILL_RUNNING, STOPPED_WHEN_ASKED, Pipeline
from jupyter_toolhost.orchestration.streaming import (
    INTERRUPTED_AGAIN,
    StreamingToolExecutor,
    interrupted_results,
)
from jupyter_toolhost.permissions.api import PermissionRequest

pytestmark = pytest.mark.timeout(30)


def text(result: ToolResult) -> str:
    return result.content if isinstance(result.content, str) else str(result.content)


class Threads:
    """Sync tools that sleep in their worker thread and record which thread that was, and
    how many ran at once at the most (what the pool allows, measured without a clock)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def nap_tool(self) -> Tool[Any]:
        @tool(name="SyncNap", concurrency_safe=True, register=False)
        def sync_nap(seconds: float) -> str:
            with self.lock:
                self.names.append(threading.current_thread().name)
                self.running += 1
                self.peak = max(self.peak, self.running)
            time.sleep(seconds)
            with self.lock:
                self.running -= 1
            return "rested"

        return sync_nap


def naps(count: int, seconds: float = 0.2, prefix: str = "n") -> list[ToolCall]:
    return [ToolCall(f"{prefix}{i}", "SyncNap", {"seconds": seconds}) for i in range(count)]


async def timed_run(tmp_path: Path, calls: list[ToolCall], *tools: Tool[Any]) -> float:
    pipeline = Pipeline(results=ResultStore(tmp_path))
    began = time.perf_counter()
    results = await run_tools(calls, pipeline=pipeline, context=make_context(tmp_path, *tools))
    elapsed = time.perf_counter() - began
    assert [r.tool_use_id for r in results] == [c.id for c in calls]
    assert not any(r.is_error for r in results), [text(r) for r in results if r.is_error]
    return elapsed


# ── the pool ─────────────────────────────────────────────────────────────────────────────


async def test_ten_sync_calls_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(CONCURRENCY_ENV, raising=False)
    threads = Threads()
    elapsed = await timed_run(tmp_path, naps(10, seconds=0.5), threads.nap_tool())
    print(f"10 concurrent 0.5 s sync calls: {elapsed:.3f} s")
    assert threads.peak == 10  # asyncio's default executor (cpu_count + 4 threads) runs fewer
    assert len(set(threads.names)) == 10
    assert all(name.startswith("toolhost-tool-10") for name in threads.names)


async def test_fifteen_sync_calls_at_cap_ten_take_two_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(CONCURRENCY_ENV, "10")
    threads = Threads()
    elapsed = await timed_run(tmp_path, naps(15, seconds=0.5), threads.nap_tool())
    print(f"15 concurrent 0.5 s sync calls at cap 10: {elapsed:.3f} s")
    assert threads.peak == 10 and len(threads.names) == 15


async def test_the_pool_caps_sync_calls_across_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The executor would run 6 at once; the pool of the cap (2) runs 2 at a time."""
    monkeypatch.setenv(CONCURRENCY_ENV, "2")
    assert sync_tool_pool()._max_workers == 2  # pyright: ignore[reportPrivateUsage]
    threads = Threads()
    context = make_context(tmp_path, threads.nap_tool())
    executor = StreamingToolExecutor(
        pipeline=Pipeline(results=ResultStore(tmp_path)), context=context, max_concurrency=10
    )
    began = time.perf_counter()
    for call in naps(6, seconds=0.3):
        executor.add_tool(call)
    results = await executor.results()
    elapsed = time.perf_counter() - began
    print(f"6 concurrent 0.3 s sync calls on a pool of 2: {elapsed:.3f} s")
    assert not any(r.is_error for r in results)
    assert threads.peak == 2
    assert len(set(threads.names)) == 2


# ── stopping a sync call ─────────────────────────────────────────────────────────────────


class Writer:
    """Sync tools that write a file when they are done; one watches its abort flag."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.returned = threading.Event()

    def polite(self) -> Tool[Any]:
        @tool(name="Polite", interrupt_behavior="cancel", register=False)
        def polite(name: str, seconds: float, context: ToolUseContext) -> str:
            try:
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    if context.cancelled():
                        return "stopped early"
                    time.sleep(0.01)
                (self.folder / name).write_text("done")
                return "written"
            finally:
                self.returned.set()

        return polite

    def stubborn(self, behavior: str = "cancel") -> Tool[Any]:
        @tool(name="Stubborn", interrupt_behavior=behavior, register=False)  # type: ignore[arg-type]
        def stubborn(name: str, seconds: float) -> str:
            try:
                time.sleep(seconds)
                (self.folder / name).write_text("done")
                return "written"
            finally:
                self.returned.set()

        return stubborn


async def interrupt_after(task: asyncio.Future[Any], delay: float) -> float:
    await asyncio.sleep(delay)
    task.cancel()  # what a kernel interrupt does to the awaiting cell
    return time.perf_counter()


async def cancelled_results(task: asyncio.Future[Any]) -> list[ToolResult]:
    with pytest.raises(asyncio.CancelledError) as raised:
        await task
    results = interrupted_results(raised.value)
    assert results is not None
    return results


async def test_a_sync_tool_that_watches_its_flag_stops(tmp_path: Path):
    writer = Writer(tmp_path)
    call = ToolCall("p", "Polite", {"name": "out.txt", "seconds": 5})
    task = asyncio.ensure_future(
        run_tools(
            [call],
            pipeline=Pipeline(results=ResultStore(tmp_path)),
            context=make_context(tmp_path, writer.polite()),
        )
    )
    sent = await interrupt_after(task, 0.2)
    [result] = await cancelled_results(task)
    elapsed = time.perf_counter() - sent
    print(f"a polite sync tool answered {elapsed:.3f} s after the interrupt")
    assert elapsed < 0.5
    assert result.is_error
    assert "Interrupted by user" in text(result) and STOPPED_WHEN_ASKED in text(result)
    assert writer.returned.is_set()
    assert not (tmp_path / "out.txt").exists()


async def test_a_sync_tool_that_ignores_its_flag_is_reported_as_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(CONCURRENCY_ENV, "1")  # one thread: the stubborn call holds it
    writer = Writer(tmp_path)
    threads = Threads()
    tools = (writer.stubborn(), threads.nap_tool())
    pipeline = Pipeline(results=ResultStore(tmp_path))
    call = ToolCall("s", "Stubborn", {"name": "late.txt", "seconds": 1.5})
    task = asyncio.ensure_future(
        run_tools([call], pipeline=pipeline, context=make_context(tmp_path, *tools))
    )
    sent = await interrupt_after(task, 0.2)
    [result] = await cancelled_results(task)
    answered = time.perf_counter()
    print(f"a stubborn sync tool answered {answered - sent:.3f} s after the interrupt")
    assert answered - sent < 1.0
    assert result.is_error and STILL_RUNNING in text(result)
    assert "may still be running" in text(result)
    assert not writer.returned.is_set() and not (tmp_path / "late.txt").exists()

    # Its pool slot stays taken: the next sync call waits until the stubborn one returned.
    began = time.perf_counter()
    [nap] = await run_tools(
        [ToolCall("after", "SyncNap", {"seconds": 0.0})],
        pipeline=pipeline,
        context=make_context(tmp_path, *tools),
    )
    assert not nap.is_error
    assert writer.returned.is_set()  # it ran after the stubborn thread was free again
    waited = time.perf_counter() - began
    print(f"the next sync call waited {waited:.3f} s for the thread")
    assert waited > 0.5
    assert (tmp_path / "late.txt").read_text() == "done"  # the write the result warned of


async def test_a_queued_sync_call_never_runs_when_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A sync call waiting for a pool thread is cancelled outright: it never runs."""
    monkeypatch.setenv(CONCURRENCY_ENV, "1")
    writer = Writer(tmp_path)
    blocker_done = threading.Event()

    @tool(name="Hog", concurrency_safe=True, interrupt_behavior="cancel", register=False)
    def hog(seconds: float) -> str:
        time.sleep(seconds)
        blocker_done.set()
        return "hogged"

    @tool(name="Late", concurrency_safe=True, interrupt_behavior="cancel", register=False)
    def late(name: str) -> str:
        (writer.folder / name).write_text("ran")
        return "ran"

    pipeline = Pipeline(results=ResultStore(tmp_path))
    context = make_context(tmp_path, hog, late)
    executor = StreamingToolExecutor(pipeline=pipeline, context=context, max_concurrency=10)
    executor.add_tool(ToolCall("h", "Hog", {"seconds": 1.0}))
    executor.add_tool(ToolCall("l", "Late", {"name": "never.txt"}))
    task = asyncio.ensure_future(executor.results())
    await interrupt_after(task, 0.2)
    hog_result, late_result = await cancelled_results(task)
    assert STILL_RUNNING in text(hog_result)
    assert late_result.is_error and STILL_RUNNING not in text(late_result)
    assert blocker_done.wait(5)
    await asyncio.sleep(0.2)
    assert not (tmp_path / "never.txt").exists()


# ── interrupts: what has not started stops at once; block calls get the grace ─────────────


class Gate:
    """A permission check that waits for a decision nobody gives (an unanswered prompt)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def __call__(self, request: PermissionRequest) -> PermissionResult:
        self.asked.set()
        await asyncio.Event().wait()
        return PermissionAllow()


async def test_a_call_waiting_for_approval_is_cancelled_at_once(tmp_path: Path):
    writer = Writer(tmp_path)
    gate = Gate()
    pipeline = Pipeline(results=ResultStore(tmp_path), can_use_tool=gate)
    call = ToolCall("s", "Stubborn", {"name": "x.txt", "seconds": 0})  # a "block" tool
    task = asyncio.ensure_future(
        run_tools(
            [call], pipeline=pipeline, context=make_context(tmp_path, writer.stubborn("block"))
        )
    )
    await asyncio.wait_for(gate.asked.wait(), 5)
    task.cancel()
    sent = time.perf_counter()
    [result] = await cancelled_results(task)
    elapsed = time.perf_counter() - sent
    print(f"a call waiting for approval was answered {elapsed:.3f} s after the interrupt")
    assert elapsed < 0.3  # not the 3 s grace of running block calls
    assert result.is_error and "never started" in text(result)
    assert "permission" in text(result)
    assert not writer.returned.is_set()


async def test_a_running_block_call_gets_a_counted_down_grace(tmp_path: Path):
    events: list[ToolEvent] = []
    writer = Writer(tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path))
    executor = StreamingToolExecutor(
        pipeline=pipeline,
        context=make_context(tmp_path, writer.stubborn("block")),
        on_event=events.append,
        interrupt_grace_s=3.0,
    )
    executor.add_tool(ToolCall("b", "Stubborn", {"name": "b.txt", "seconds": 1.3}))
    task = asyncio.ensure_future(executor.results())
    sent = await interrupt_after(task, 0.1)
    [result] = await cancelled_results(task)
    elapsed = time.perf_counter() - sent
    print(f"a 1.3 s block call finished {elapsed:.3f} s after the interrupt")
    assert (result.is_error, result.content) == (False, "written")
    assert 0.9 < elapsed < 1.8
    countdown = [e.remaining_s for e in events if isinstance(e, CallFinishing)]
    assert countdown == [3, 2]


async def test_a_second_interrupt_stops_the_block_call_too(tmp_path: Path):
    writer = Writer(tmp_path)
    executor = StreamingToolExecutor(
        pipeline=Pipeline(results=ResultStore(tmp_path)),
        context=make_context(tmp_path, writer.stubborn("block")),
    )
    executor.add_tool(ToolCall("b", "Stubborn", {"name": "b.txt", "seconds": 0.3}))
    task = asyncio.ensure_future(executor.results())
    await interrupt_after(task, 0.05)
    sent = await interrupt_after(task, 0.1)
    [result] = await cancelled_results(task)
    elapsed = time.perf_counter() - sent
    print(f"after a second interrupt the block call was answered in {elapsed:.3f} s")
    assert elapsed < 0.25  # the thread returned within the sync stop wait
    assert result.is_error and INTERRUPTED_AGAIN in text(result)
    assert STOPPED_WHEN_ASKED in text(result)  # the 0.3 s sleep ended within the wait
