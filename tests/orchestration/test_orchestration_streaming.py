"""The streaming executor: early starts, sibling abort with real subprocesses, interrupts.

Streams are simulated by adding tool_use blocks with real pauses between them, as the model
client does when each block finishes streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from orchestration_support import NapInput, make_context
from orchestration_support import Timeline as SharedTimeline
from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall, ToolError, ToolResult
from jupyter_toolhost.orchestration.batches import run_tools
from jupyter_toolhost.orchestration.events import (
    NOT_STARTED_BATCH,
    CallFinished,
    ToolEvent,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.orchestration.streaming import StreamingToolExecutor, interrupted_results


class Timeline(SharedTimeline):
    """The shared sleeping tools, answering "rested"."""

    def reply(self, input: NapInput) -> str:
        return "rested"


def make_executor(context: ToolUseContext, **options: Any) -> StreamingToolExecutor:
    pipeline = Pipeline(results=ResultStore(context.session_dir() / "tool-results"))
    return StreamingToolExecutor(pipeline=pipeline, context=context, **options)


def call(call_id: str, name: str = "Nap", **fields: Any) -> ToolCall:
    return ToolCall(call_id, name, fields)


def text(result: ToolResult) -> str:
    assert isinstance(result.content, str)
    return result.content


# ── streaming ────────────────────────────────────────────────────────────────────────────


async def test_a_safe_call_starts_while_the_message_still_streams(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, timeline.tool()))
    executor.add_tool(call("first", seconds=0.2))
    await asyncio.sleep(0.05)  # the model is still streaming the next block
    assert executor.status("first") == "executing"
    assert "first" in timeline.spans
    executor.add_tool(call("second", seconds=0.0))
    message_ended = time.perf_counter()
    results = await executor.results()
    assert timeline.spans["first"][0] < message_ended
    assert [r.tool_use_id for r in results] == ["first", "second"]
    assert timeline.spans["second"][0] < timeline.spans["first"][1]  # ran beside it


async def test_an_unsafe_call_holds_back_everything_after_it(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, timeline.tool()))
    executor.add_tool(call("read", seconds=0.15))
    executor.add_tool(call("edit", seconds=0.05, safe=False))
    executor.add_tool(call("read2", seconds=0.0))
    await asyncio.sleep(0.05)
    assert [executor.status(i) for i in ("read", "edit", "read2")] == [
        "executing",
        "queued",
        "queued",
    ]
    await executor.results()
    spans = timeline.spans
    assert spans["edit"][0] >= spans["read"][1]
    assert spans["read2"][0] >= spans["edit"][1]
    assert executor.status("edit") == "yielded"


async def test_max_concurrency_is_honoured(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, timeline.tool()), max_concurrency=2)
    for i in range(4):
        executor.add_tool(call(f"n{i}", seconds=0.1))
    await asyncio.sleep(0.03)
    assert [executor.status(f"n{i}") for i in range(4)] == [
        "executing",
        "executing",
        "queued",
        "queued",
    ]
    assert len(await executor.results()) == 4
    with pytest.raises(ValueError, match="at least 1"):
        make_executor(make_context(tmp_path), max_concurrency=0)


# ── sibling abort with a real subprocess ─────────────────────────────────────────────────


class ShellInput(BaseModel):
    argv: list[str]


def _proc_state(pid: int) -> tuple[str, int] | None:
    """(state, process group) of a live process; None when gone (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else (fields[0], int(fields[2]))


def _group_alive(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            state = _proc_state(int(entry))
            if state is not None and state[1] == pgid:
                members.append(int(entry))
    return members


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process state from /proc")
async def test_a_failing_sibling_kills_a_real_sleep_and_its_process_group(
    tmp_path: Path,
) -> None:
    spawned: dict[str, int] = {}
    failed_at: list[float] = []
    started: list[str] = []
    kill_reasons: list[str] = []

    async def shell(input: ShellInput, context: ToolUseContext) -> str:
        assert context.tool_use_id is not None
        started.append(context.tool_use_id)
        proc = await asyncio.create_subprocess_exec(
            *input.argv, start_new_session=True, stdout=subprocess.DEVNULL
        )
        spawned[context.tool_use_id] = proc.pid

        def kill_group(reason: str) -> None:
            kill_reasons.append(reason)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        remove = context.abort.add_callback(kill_group)
        try:
            code = await proc.wait()
        finally:
            remove()
            if proc.returncode is None:  # cancelled without an abort: never leave it behind
                kill_group("cleanup")
        if code != 0:
            failed_at.append(time.perf_counter())
            raise ToolError(f"exit code {code}")
        return "done"

    tool = build_tool(
        name="Shell",
        input_model=ShellInput,
        call=shell,
        description="Run a command.",
        concurrency_safe=lambda i: i.argv[0] != "touch",
        cancels_siblings_on_error=True,
    )
    timeline = Timeline()
    context = make_context(tmp_path, tool, timeline.tool())
    events: list[ToolEvent] = []
    executor = make_executor(context, on_event=events.append)
    # a shell whose group holds two sleeps: killing only the shell would orphan one
    executor.add_tool(call("sleeper", "Shell", argv=["sh", "-c", "sleep 30 & sleep 30; wait"]))
    executor.add_tool(call("failer", "Shell", argv=["sh", "-c", "sleep 0.3; exit 3"]))
    executor.add_tool(call("later", "Shell", argv=["touch", str(tmp_path / "never")]))
    executor.add_tool(call("nap", seconds=0.0))
    results = await asyncio.wait_for(executor.results(), timeout=10)

    pgid = spawned["sleeper"]
    for _ in range(50):  # poll for up to 0.5 s
        if not _group_alive(pgid) or time.perf_counter() - failed_at[0] >= 0.5:
            break
        await asyncio.sleep(0.01)
    assert _group_alive(pgid) == [], "the sleeping process group outlived the abort"
    assert time.perf_counter() - failed_at[0] < 0.5

    assert [r.tool_use_id for r in results] == ["sleeper", "failer", "later", "nap"]
    assert all(r.is_error for r in results)
    assert "exit code 3" in text(results[1])
    assert "sibling tool call (Shell failer) failed" in text(results[0])
    assert "sibling tool call (Shell failer) failed" in text(results[2])
    assert kill_reasons[0] == "a sibling tool call (Shell failer) failed"  # via the signal
    assert started == ["sleeper", "failer"]  # the queued calls never started
    assert "nap" not in timeline.spans and not (tmp_path / "never").exists()
    statuses = {e.call_id: (e.status, e.batch) for e in events if isinstance(e, CallFinished)}
    assert statuses == {
        "failer": ("error", 0),
        "sleeper": ("cancelled", 0),
        "later": ("cancelled", NOT_STARTED_BATCH),
        "nap": ("cancelled", NOT_STARTED_BATCH),
    }
    assert not context.abort.aborted  # the turn goes on
    again = await run_tools(
        [call("next", seconds=0.0)],
        pipeline=Pipeline(results=ResultStore(tmp_path)),
        context=context,
    )
    assert (again[0].is_error, again[0].content) == (False, "rested")


async def test_a_failure_of_a_tool_without_the_flag_cancels_nothing(tmp_path: Path) -> None:
    async def fail(_input: NapInput, _context: ToolUseContext) -> str:
        raise ToolError("nope")

    failing = build_tool(
        name="Fail", input_model=NapInput, call=fail, description="f", concurrency_safe=True
    )
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, failing, timeline.tool()))
    executor.add_tool(call("slow", seconds=0.15))
    executor.add_tool(call("bad", "Fail"))
    results = await executor.results()
    assert [(r.tool_use_id, r.is_error) for r in results] == [("slow", False), ("bad", True)]


# ── interrupts ───────────────────────────────────────────────────────────────────────────


def _interrupt_tools(timeline: Timeline) -> list[Tool[NapInput]]:
    return [
        timeline.tool("Cancelable", interrupt_behavior="cancel"),
        timeline.tool("Blocking", interrupt_behavior="block"),
    ]


async def test_interrupt_cancels_cancel_calls_and_lets_block_calls_finish(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, *_interrupt_tools(timeline)))
    executor.add_tool(call("c", "Cancelable", seconds=30))
    executor.add_tool(call("b", "Blocking", seconds=0.2))
    executor.add_tool(call("q", "Blocking", seconds=0.0, safe=False))
    await asyncio.sleep(0.05)
    executor.interrupt()
    executor.add_tool(call("late", "Cancelable"))
    began = time.perf_counter()
    results = await asyncio.wait_for(executor.results(), timeout=5)

    assert time.perf_counter() - began < 1.0
    by_id = {r.tool_use_id: r for r in results}
    assert [r.tool_use_id for r in results] == ["c", "b", "q", "late"]
    assert by_id["c"].is_error and "Interrupted by user" in text(by_id["c"])
    assert (by_id["b"].is_error, by_id["b"].content) == (False, "rested")  # it blocked
    assert by_id["q"].is_error and "never started" in text(by_id["q"])
    assert by_id["late"].is_error
    assert set(timeline.spans) == {"c", "b"}


async def test_a_kernel_interrupt_answers_every_call_and_reraises(tmp_path: Path) -> None:
    timeline = Timeline()
    context = make_context(tmp_path, *_interrupt_tools(timeline))
    pipeline = Pipeline(results=ResultStore(tmp_path))
    calls = [
        call("c", "Cancelable", seconds=30),
        call("b", "Blocking", seconds=0.3),
        call("q", "Cancelable", seconds=0.0, safe=False),
    ]
    task = asyncio.ensure_future(run_tools(calls, pipeline=pipeline, context=context))
    await asyncio.sleep(0.05)
    task.cancel()  # what a kernel interrupt does to the awaiting cell
    with pytest.raises(asyncio.CancelledError) as raised:
        await task
    results = interrupted_results(raised.value)
    assert results is not None
    assert [r.tool_use_id for r in results] == ["c", "b", "q"]
    assert [r.is_error for r in results] == [True, False, True]
    assert "Interrupted by user" in text(results[0])
    assert not math.isnan(timeline.spans["b"][1])  # the block call ran to completion


async def test_block_calls_get_only_a_grace_period_on_a_kernel_interrupt(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(
        make_context(tmp_path, *_interrupt_tools(timeline)), interrupt_grace_s=0.2
    )
    executor.add_tool(call("stuck", "Blocking", seconds=30))
    task = asyncio.ensure_future(executor.results())
    await asyncio.sleep(0.05)
    began = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - began < 2.0
    [result] = executor.completed_results()
    assert result.is_error and "did not finish within 0.2 s" in text(result)
    assert await executor.results() == [result]


# ── discard and the turn's own abort ─────────────────────────────────────────────────────


async def test_discard_drops_calls_that_had_not_started(tmp_path: Path) -> None:
    timeline = Timeline()
    executor = make_executor(make_context(tmp_path, timeline.tool()))
    executor.add_tool(call("running", seconds=0.1))
    executor.add_tool(call("waiting", safe=False))
    await asyncio.sleep(0)
    executor.discard()
    executor.add_tool(call("after"))
    results = await executor.results()
    assert [(r.tool_use_id, r.is_error) for r in results] == [
        ("running", False),
        ("waiting", True),
        ("after", True),
    ]
    assert "discarded" in text(results[1])
    assert set(timeline.spans) == {"running"}


async def test_aborting_the_turn_stops_every_call(tmp_path: Path) -> None:
    timeline = Timeline()
    context = make_context(tmp_path, *_interrupt_tools(timeline))
    executor = make_executor(context)
    executor.add_tool(call("b", "Blocking", seconds=30))
    executor.add_tool(call("q", "Blocking", safe=False))
    await asyncio.sleep(0.02)
    context.abort.abort("turn aborted")
    results = await asyncio.wait_for(executor.results(), timeout=5)
    assert [r.is_error for r in results] == [True, True]
    assert "Turn aborted" in text(results[0])
    assert set(timeline.spans) == {"b"}


async def test_a_turn_aborted_before_the_message_runs_nothing(tmp_path: Path) -> None:
    timeline = Timeline()
    context = make_context(tmp_path, timeline.tool())
    context.abort.abort("turn aborted")
    executor = make_executor(context)
    executor.add_tool(call("a"))
    [result] = await executor.results()
    assert result.is_error and "never started" in text(result)
    assert timeline.spans == {}


async def test_an_empty_message_has_no_results(tmp_path: Path) -> None:
    executor = make_executor(make_context(tmp_path))
    assert await executor.results() == []
    with pytest.raises(RuntimeError):
        executor.add_tool(call("x"))
