"""Batching, the concurrency cap, result order, context modifiers, events and the budget.

The tools sleep for real and record when they started and ended, so the batch shape and
the cap are read off real timings (with wide margins; only "two waves" is a timing claim).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from orchestration_support import Timeline, make_context
from pydantic import BaseModel

from jupyter_toolhost import ToolOutput, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PermissionDeny, ToolCall
from jupyter_toolhost.orchestration.batches import (
    Batch,
    max_tool_use_concurrency,
    partition_tool_calls,
    run_tools,
)
from jupyter_toolhost.orchestration.events import (
    CallFinished,
    CallProgress,
    CallQueued,
    CallStarted,
    ToolEvent,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.orchestration.streaming import StreamingToolExecutor


def make_pipeline(context: ToolUseContext) -> Pipeline:
    return Pipeline(results=ResultStore(context.session_dir() / "tool-results"))


def nap(call_id: str, seconds: float = 0.0, **fields: Any) -> ToolCall:
    return ToolCall(call_id, "Nap", {"seconds": seconds, **fields})


# ── partition ────────────────────────────────────────────────────────────────────────────


class ShellInput(BaseModel):
    command: str


class PathInput(BaseModel):
    file_path: str


def _tools() -> list[Tool[Any]]:
    def noop(_input: Any, _context: ToolUseContext) -> str:
        return ""

    def broken(_input: Any) -> bool:
        raise RuntimeError("predicate bug")

    return [
        build_tool(
            name="Read", input_model=PathInput, call=noop, description="r", concurrency_safe=True
        ),
        build_tool(name="Edit", input_model=PathInput, call=noop, description="e"),
        build_tool(
            name="Bash",
            input_model=ShellInput,
            call=noop,
            description="b",
            concurrency_safe=lambda i: i.command.split()[0] in {"ls", "cat"},
        ),
        build_tool(
            name="Odd", input_model=PathInput, call=noop, description="o", concurrency_safe=broken
        ),
    ]


def _shape(batches: list[Batch]) -> list[tuple[list[str], bool]]:
    return [([c.id for c in b.calls], b.concurrency_safe) for b in batches]


def test_partition_groups_safe_runs_and_isolates_unsafe_calls() -> None:
    calls = [
        ToolCall("r1", "Read", {"file_path": "a"}),
        ToolCall("b1", "Bash", {"command": "ls -la"}),
        ToolCall("e1", "Edit", {"file_path": "a"}),
        ToolCall("r2", "Read", {"file_path": "b"}),
    ]
    assert _shape(partition_tool_calls(calls, _tools())) == [
        (["r1", "b1"], True),
        (["e1"], False),
        (["r2"], True),
    ]


def test_partition_asks_the_tool_about_the_parsed_input_and_fails_closed() -> None:
    calls = [
        ToolCall("r1", "Read", {"file_path": "a"}),
        ToolCall("b1", "Bash", {"command": "rm -rf build"}),  # writing command: unsafe
        ToolCall("r2", "Read", {"file_path": "b"}),
        ToolCall("r3", "Read", {"nope": 1}),  # fails to parse: unsafe
        ToolCall("o1", "Odd", {"file_path": "x"}),  # predicate raises: unsafe
        ToolCall("u1", "Missing", {}),  # unknown tool: unsafe
        ToolCall("r4", "Read", {"file_path": "c"}),
    ]
    assert _shape(partition_tool_calls(calls, _tools())) == [
        (["r1"], True),
        (["b1"], False),
        (["r2"], True),
        (["r3"], False),
        (["o1"], False),
        (["u1"], False),
        (["r4"], True),
    ]
    assert partition_tool_calls([], _tools()) == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, 10), ("3", 3), (" 25 ", 25), ("0", 10), ("-4", 10), ("ten", 10), ("2.5", 10)],
)
def test_concurrency_cap_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: int
) -> None:
    if raw is None:
        monkeypatch.delenv("JUPYTER_TOOLHOST_MAX_TOOL_USE_CONCURRENCY", raising=False)
    else:
        monkeypatch.setenv("JUPYTER_TOOLHOST_MAX_TOOL_USE_CONCURRENCY", raw)
    assert max_tool_use_concurrency() == expected


# ── running batches ──────────────────────────────────────────────────────────────────────


async def test_batches_run_in_the_partitioned_shape(tmp_path: Path) -> None:
    timeline = Timeline()
    context = make_context(tmp_path, timeline.tool())
    events: list[ToolEvent] = []
    calls = [
        nap("a", 0.2),
        nap("b", 0.1),
        nap("c", 0.05, safe=False),
        nap("d", 0.05),
        nap("e", 0.05),
    ]
    results = await run_tools(
        calls, pipeline=make_pipeline(context), context=context, on_event=events.append
    )

    assert [r.tool_use_id for r in results] == ["a", "b", "c", "d", "e"]
    assert not any(r.is_error for r in results)
    # a and b overlap; c starts after both ended; d and e overlap and start after c ended
    assert timeline.start("b") < timeline.end("a")
    assert timeline.start("c") >= max(timeline.end("a"), timeline.end("b"))
    assert min(timeline.start("d"), timeline.start("e")) >= timeline.end("c")
    assert timeline.start("e") < timeline.end("d")
    finished = {e.call_id: e.batch for e in events if isinstance(e, CallFinished)}
    assert finished == {"a": 0, "b": 0, "c": 1, "d": 2, "e": 2}
    batches = partition_tool_calls(calls, context.options.tools)
    assert [[finished[c.id] for c in b.calls] for b in batches] == [[0, 0], [1], [2, 2]]


async def test_ten_safe_sleeps_run_concurrently(tmp_path: Path) -> None:
    context = make_context(tmp_path, Timeline().tool())
    began = time.perf_counter()
    results = await run_tools(
        [nap(f"n{i}", 0.1) for i in range(10)], pipeline=make_pipeline(context), context=context
    )
    assert len(results) == 10
    assert time.perf_counter() - began < 0.6  # sequential would be 1.0 s


async def test_cap_of_ten_runs_fifteen_calls_in_two_waves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_TOOLHOST_MAX_TOOL_USE_CONCURRENCY", "10")
    timeline = Timeline()
    context = make_context(tmp_path, timeline.tool())
    ids = [f"n{i:02}" for i in range(15)]
    began = time.perf_counter()
    results = await run_tools(
        [nap(i, 0.3) for i in ids], pipeline=make_pipeline(context), context=context
    )
    wall = time.perf_counter() - began

    assert [r.tool_use_id for r in results] == ids
    first_end = min(timeline.end(i) for i in ids)
    assert sum(timeline.start(i) < first_end for i in ids) == 10  # the first wave
    assert all(timeline.start(i) >= first_end for i in ids[10:])  # the second wave waited
    moments = sorted({timeline.start(i) for i in ids} | {timeline.end(i) for i in ids})
    peak = max(sum(timeline.start(i) <= t < timeline.end(i) for i in ids) for t in moments)
    assert peak == 10
    # The second wave started together: two waves, not three. (From the timeline, not the
    # wall clock, which a loaded machine stretches.)
    assert max(timeline.start(i) for i in ids[10:]) < min(timeline.end(i) for i in ids[10:])
    assert wall > 0.55  # the second wave waited for the first


async def test_results_come_back_in_call_order_whatever_finishes_first(tmp_path: Path) -> None:
    context = make_context(tmp_path, Timeline().tool())
    events: list[ToolEvent] = []
    calls = [nap("slow", 0.25), nap("mid", 0.12), nap("fast", 0.0)]
    results = await run_tools(
        calls, pipeline=make_pipeline(context), context=context, on_event=events.append
    )
    assert [r.tool_use_id for r in results] == ["slow", "mid", "fast"]
    assert [e.call_id for e in events if isinstance(e, CallFinished)] == ["fast", "mid", "slow"]
    assert [r.content for r in results] == ["slept 0.25", "slept 0.12", "slept 0.0"]


class NoteInput(BaseModel):
    note: str
    seconds: float = 0.0
    safe: bool = True


async def test_context_modifiers_apply_after_the_batch_in_call_order(tmp_path: Path) -> None:
    applied: list[str] = []
    running: set[str] = set()
    seen_by_unsafe: list[list[str]] = []

    async def note(input: NoteInput, context: ToolUseContext) -> ToolOutput:
        running.add(input.note)
        if not input.safe:
            seen_by_unsafe.append(list(applied))
        await asyncio.sleep(input.seconds)
        running.discard(input.note)

        def modify(ctx: ToolUseContext) -> None:
            assert not running, "a modifier ran while its batch was still running"
            assert ctx is context_ref
            applied.append(input.note)

        return ToolOutput(data=input.note, context_modifier=modify)

    tool = build_tool(
        name="Note",
        input_model=NoteInput,
        call=note,
        description="n",
        concurrency_safe=lambda i: i.safe,
    )
    context_ref = make_context(tmp_path, tool)
    calls = [
        ToolCall("1", "Note", {"note": "first", "seconds": 0.15}),
        ToolCall("2", "Note", {"note": "second", "seconds": 0.0}),
        ToolCall("3", "Note", {"note": "third", "safe": False}),
        ToolCall("4", "Note", {"note": "fourth"}),
    ]
    results = await run_tools(calls, pipeline=make_pipeline(context_ref), context=context_ref)
    assert [r.content for r in results] == ["first", "second", "third", "fourth"]
    assert seen_by_unsafe == [["first", "second"]]  # the batch's changes, in call order
    assert applied == ["first", "second", "third", "fourth"]


# ── events and every path ───────────────────────────────────────────────────────────────


def events_of(events: list[ToolEvent], call_id: str) -> list[ToolEvent]:
    return [e for e in events if (e.call.id if isinstance(e, CallQueued) else e.call_id) == call_id]


class StepsInput(BaseModel):
    steps: int


async def test_progress_events_from_async_and_threaded_tools(tmp_path: Path) -> None:
    async def async_steps(input: StepsInput, context: ToolUseContext) -> str:
        assert context.progress is not None
        for step in range(input.steps):
            context.progress(f"async {step}")
            await asyncio.sleep(0)
        return "done"

    def thread_steps(input: StepsInput, context: ToolUseContext) -> str:
        assert context.progress is not None
        for step in range(input.steps):
            context.progress(f"thread {step}")
        return "done"

    tools = [
        build_tool(name="A", input_model=StepsInput, call=async_steps, description="a"),
        build_tool(name="T", input_model=StepsInput, call=thread_steps, description="t"),
    ]
    context = make_context(tmp_path, *tools)
    events: list[ToolEvent] = []
    calls = [ToolCall("a", "A", {"steps": 3}), ToolCall("t", "T", {"steps": 2})]
    await run_tools(calls, pipeline=make_pipeline(context), context=context, on_event=events.append)

    expected = {"a": ["async 0", "async 1", "async 2"], "t": ["thread 0", "thread 1"]}
    for call_id, texts in expected.items():
        mine = events_of(events, call_id)
        kinds = [type(e).__name__ for e in mine]
        assert kinds == [
            "CallQueued",
            "CallStarted",
            *["CallProgress"] * len(texts),
            "CallFinished",
        ]
        assert [e.text for e in mine if isinstance(e, CallProgress)] == texts
        finished = mine[-1]
        assert isinstance(finished, CallFinished)
        assert finished.status == "ok" and finished.duration_s > 0
        started = mine[1]
        assert isinstance(started, CallStarted) and started.started_at <= time.perf_counter()


async def test_every_path_gives_exactly_one_result_with_its_status(tmp_path: Path) -> None:
    def deny(_input: Any, _context: ToolUseContext) -> PermissionDeny:
        return PermissionDeny("not here")

    timeline = Timeline()
    tools = [timeline.tool(), timeline.tool("Locked", check_permissions=deny)]
    context = make_context(tmp_path, *tools)
    events: list[ToolEvent] = []
    calls = [
        nap("ok"),
        nap("fails", fail=True),
        ToolCall("unknown", "Nope", {}),
        ToolCall("bad", "Nap", {"seconds": "soon"}),
        ToolCall("denied", "Locked", {}),
        nap("ok2"),
    ]
    results = await run_tools(
        calls, pipeline=make_pipeline(context), context=context, on_event=events.append
    )
    assert [r.tool_use_id for r in results] == [c.id for c in calls]
    statuses = {e.call_id: e.status for e in events if isinstance(e, CallFinished)}
    assert statuses == {
        "ok": "ok",
        "fails": "error",
        "unknown": "error",
        "bad": "error",
        "denied": "denied",
        "ok2": "ok",
    }
    assert [r.is_error for r in results] == [False, True, True, True, True, False]
    assert "denied" not in timeline.spans  # a denied call never ran
    assert sum(isinstance(e, CallFinished) for e in events) == len(calls)


async def test_a_raising_event_handler_loses_nothing(tmp_path: Path) -> None:
    context = make_context(tmp_path, Timeline().tool())

    def broken(_event: ToolEvent) -> None:
        raise RuntimeError("renderer bug")

    results = await run_tools(
        [nap("a"), nap("b")], pipeline=make_pipeline(context), context=context, on_event=broken
    )
    assert [(r.tool_use_id, r.is_error) for r in results] == [("a", False), ("b", False)]


class BigInput(BaseModel):
    size: int


async def test_the_message_budget_persists_the_largest_results(tmp_path: Path) -> None:
    def big(input: BigInput, _context: ToolUseContext) -> str:
        return "x" * input.size

    tool = build_tool(
        name="Big",
        input_model=BigInput,
        call=big,
        description="b",
        concurrency_safe=True,
        max_result_size_chars=float("inf"),  # no per-result cap: only the message budget
    )
    context = make_context(tmp_path, tool)
    calls = [ToolCall(f"big{i}", "Big", {"size": size}) for i, size in enumerate([90_000] * 3)]
    executor = StreamingToolExecutor(pipeline=make_pipeline(context), context=context)
    for call in calls:
        executor.add_tool(call)
    results = await executor.results()
    persisted = [r for r in results if r.persisted_path is not None]
    assert len(persisted) == 1  # 270k over the 200k budget: the first largest goes to disk
    assert Path(persisted[0].persisted_path or "").read_text() == "x" * 90_000
    assert executor.status("big0") == "yielded"
