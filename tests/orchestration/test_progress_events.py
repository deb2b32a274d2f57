"""Richer progress: text, fraction, output tail and checklists, from real tools through the
real streaming executor; and a subagent's calls reaching the parent's sink as `ChildEvent`s
through the real loop and the loopback Messages server."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import AGENT_ID, Router, last_results, result_text, session_for

from jupyter_toolhost import build_tool
from jupyter_toolhost.agent.events import ChildEvent, LoopEvent, TextDelta
from jupyter_toolhost.core.context import (
    ChecklistItem,
    Progress,
    SandboxOptions,
    ToolUseContext,
    ToolUseOptions,
)
from jupyter_toolhost.core.process import TAIL_BYTES, tail_lines
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.mcp import McpManager, McpServerConfig
from jupyter_toolhost.orchestration.batches import run_tools
from jupyter_toolhost.orchestration.events import (
    CallFinished,
    CallProgress,
    CallQueued,
    CallStarted,
    ToolEvent,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent, bash, tasks, todo_write
from jupyter_toolhost.tools.tasks.prompt import TASKS_V2_ENV

PROGRESS_SERVER = str(Path(__file__).parents[1] / "mcp_servers" / "progress_server.py")


class Recorder:
    """An event sink that keeps every event with the time it arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[float, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        with self.lock:
            self.events.append((time.perf_counter(), event))

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for _, event in self.events if isinstance(event, kind)]

    def when(self, event: Any) -> float:
        return next(at for at, seen in self.events if seen is event)


async def run_calls(
    tmp_path: Path, tools: list[Tool[Any]], *calls: ToolCall
) -> tuple[list[ToolResult], Recorder]:
    context = ToolUseContext(
        options=ToolUseOptions(tools=tools, sandbox=SandboxOptions(enabled=False)), cwd=tmp_path
    )
    recorder = Recorder()
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    results = await run_tools(list(calls), pipeline=pipeline, context=context, on_event=recorder)
    return results, recorder


# ── plain progress: strings stay text, Progress carries more ────────────────────────────


class Empty(BaseModel):
    pass


def reporting_tool(*reports: str | Progress, sync: bool = False) -> Tool[Empty]:
    def report_all(context: ToolUseContext) -> str:
        assert context.progress is not None
        for report in reports:
            context.progress(report)
        return "done"

    if sync:

        def call_sync(_input: Empty, context: ToolUseContext) -> str:
            return report_all(context)

        return build_tool(name="Reporter", input_model=Empty, call=call_sync, description="r")

    async def call_async(_input: Empty, context: ToolUseContext) -> str:
        return report_all(context)

    return build_tool(name="Reporter", input_model=Empty, call=call_async, description="r")


@pytest.mark.parametrize("sync", [False, True])
async def test_a_string_is_text_and_a_progress_keeps_its_fraction(
    tmp_path: Path, sync: bool
) -> None:
    tool = reporting_tool("warming up", Progress(text="half", fraction=0.5), sync=sync)
    [result], recorder = await run_calls(tmp_path, [tool], ToolCall("toolu_r", "Reporter", {}))
    assert result.content == "done"
    progress = recorder.of(CallProgress)
    assert progress == [
        CallProgress("toolu_r", "warming up"),
        CallProgress("toolu_r", "half", fraction=0.5),
    ]
    assert progress[0].fraction is None and progress[0].tail == () and progress[0].checklist is None
    # Progress arrives between the call's start and its finish (from a worker thread too).
    [started] = recorder.of(CallStarted)
    [finished] = recorder.of(CallFinished)
    assert recorder.when(started) <= recorder.when(progress[0]) <= recorder.when(finished)


# ── Bash: the tail of the output while the command runs ─────────────────────────────────


async def test_bash_reports_the_tail_of_its_output_while_it_runs(tmp_path: Path) -> None:
    long = "x" * 500
    command = f"echo {long}; for i in $(seq 1 5); do echo line$i; sleep 0.4; done"
    [result], recorder = await run_calls(
        tmp_path, [bash.make_tool()], ToolCall("toolu_b", "Bash", {"command": command})
    )
    assert not result.is_error and "line5" in str(result.content)
    [finished] = recorder.of(CallFinished)
    progress = [p for p in recorder.of(CallProgress) if p.tail]
    assert progress, "no progress with a tail arrived"
    first = progress[0]
    assert recorder.when(first) < recorder.when(finished)
    assert first.text.endswith("of output so far")
    assert "line1" in first.tail and "line5" not in first.tail
    for event in progress:
        assert 1 <= len(event.tail) <= 5
        assert all(line.strip() and len(line) <= 200 for line in event.tail)
    assert progress[0].tail[0].startswith("x" * 100) and progress[0].tail[0].endswith("…")


def test_tail_lines_reads_only_the_end_of_a_big_file(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    with path.open("w") as handle:
        handle.write("a" * (TAIL_BYTES * 3) + "\n")  # one huge line the tail cuts into
        for n in range(1, 2_001):
            handle.write(f"row {n}\n\n")
    assert tail_lines(path) == tuple(f"row {n}" for n in range(1996, 2001))
    only_long = tmp_path / "long.txt"
    only_long.write_text("b" * (TAIL_BYTES * 2) + "\nend\n")
    assert tail_lines(only_long) == ("end",)  # the partial first line is dropped
    assert tail_lines(tmp_path / "missing.txt") == ()


# ── MCP: a real server's notifications/progress ─────────────────────────────────────────


@pytest.mark.timeout(60)
async def test_mcp_progress_notifications_become_call_progress(tmp_path: Path) -> None:
    manager = McpManager([McpServerConfig.stdio("prog", sys.executable, PROGRESS_SERVER)])
    try:
        await manager.start()
        tools = manager.tools()
        names = {t.name for t in tools}
        assert {"mcp__prog__count_up", "mcp__prog__spin"} <= names
        results, recorder = await run_calls(
            tmp_path,
            tools,
            ToolCall("toolu_c", "mcp__prog__count_up", {"steps": 4}),
            ToolCall("toolu_s", "mcp__prog__spin", {}),
        )
    finally:
        await manager.close()
    assert [result_text_of(r) for r in results] == ["counted to 4", "spun"]
    counted = [p for p in recorder.of(CallProgress) if p.call_id == "toolu_c"]
    assert [(p.text, p.fraction) for p in counted] == [
        (f"step {n} of 4", n / 4) for n in range(1, 5)
    ]
    [spun] = [p for p in recorder.of(CallProgress) if p.call_id == "toolu_s"]
    assert (spun.text, spun.fraction) == ("", None)


def result_text_of(result: ToolResult) -> str:
    content = result.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


# ── checklists: TodoWrite and the Task tools ────────────────────────────────────────────


async def test_todo_write_reports_its_new_checklist(tmp_path: Path) -> None:
    todos = [
        {"content": "Load data", "status": "completed", "activeForm": "Loading data"},
        {"content": "Plot", "status": "in_progress", "activeForm": "Plotting"},
        {"content": "Report", "status": "pending", "activeForm": "Reporting"},
    ]
    [result], recorder = await run_calls(
        tmp_path, [todo_write.make_tool()], ToolCall("toolu_t", "TodoWrite", {"todos": todos})
    )
    assert not result.is_error
    [progress] = recorder.of(CallProgress)
    assert progress.call_id == "toolu_t"
    assert progress.checklist == (
        ChecklistItem("Load data", "completed", "Loading data"),
        ChecklistItem("Plot", "in_progress", "Plotting"),
        ChecklistItem("Report", "pending", "Reporting"),
    )


async def test_task_tools_report_the_board_in_order_without_deleted_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TASKS_V2_ENV, "1")
    results, recorder = await run_calls(
        tmp_path,
        tasks.make_tools(),
        ToolCall("c1", "TaskCreate", {"subject": "Load", "activeForm": "Loading"}),
        ToolCall("c2", "TaskCreate", {"subject": "Clean"}),
        ToolCall("c3", "TaskCreate", {"subject": "Fit", "activeForm": "Fitting"}),
        ToolCall("u1", "TaskUpdate", {"taskId": "2", "status": "deleted"}),
        ToolCall("u2", "TaskUpdate", {"taskId": "3", "status": "in_progress"}),
        ToolCall("l1", "TaskList", {}),
    )
    assert not any(r.is_error for r in results)
    by_call = {p.call_id: p.checklist for p in recorder.of(CallProgress)}
    assert by_call["c2"] == (
        ChecklistItem("Load", "pending", "Loading"),
        ChecklistItem("Clean", "pending", None),
    )
    final = (
        ChecklistItem("Load", "pending", "Loading"),
        ChecklistItem("Fit", "in_progress", "Fitting"),
    )
    assert by_call["u2"] == final and by_call["l1"] == final
    assert [item.content for item in by_call["u1"] or ()] == ["Load", "Fit"]


# ── ChildEvent: what a subagent does reaches the parent live ────────────────────────────


class Note(BaseModel):
    text: str


def note_tool(events: list[str]) -> Tool[Note]:
    async def write_note(input: Note, context: ToolUseContext) -> str:
        assert context.progress is not None
        context.progress(Progress(text=f"noting {input.text}", fraction=1.0))
        events.append(input.text)
        return f"noted {input.text}"

    return build_tool(
        name="Note", input_model=Note, call=write_note, description="Write a note.", read_only=True
    )


async def test_a_subagents_calls_reach_the_parent_sink_as_child_events(tmp_path: Path) -> None:
    notes: list[str] = []
    job = "SUB-NOTE: note the word hello, then report."
    todos = [{"content": "Note it", "status": "in_progress", "activeForm": "Noting it"}]
    router = Router(
        {
            "MAIN-NOTE": [
                Turn([tool_use("Agent", {"description": "take a note", "prompt": job})]),
                Turn([text("The subagent took the note.")]),
            ],
            "SUB-NOTE": [
                Turn([tool_use("TodoWrite", {"todos": todos})]),
                Turn([tool_use("Note", {"text": "hello"})]),
                Turn([text("Noted hello.")]),
            ],
        }
    )
    recorder = Recorder()
    with MessagesServer(router) as server:
        session = session_for(
            server,
            tmp_path,
            [agent.make_tool(), todo_write.make_tool(), note_tool(notes)],
        )
        result = await session.run("MAIN-NOTE: get a note taken", on_event=recorder)

    assert server.errors == []
    assert result == "The subagent took the note." and notes == ["hello"]
    [report] = last_results(router.seen["MAIN-NOTE"][1])
    assert AGENT_ID.search(result_text(report))
    [agent_queued] = [q for q in recorder.of(CallQueued) if q.tool_name == "Agent"]
    agent_id = agent_queued.call.id
    [agent_finished] = [f for f in recorder.of(CallFinished) if f.call_id == agent_id]
    children = recorder.of(ChildEvent)
    assert children and all(c.parent_call_id == agent_id for c in children)
    inner: list[ToolEvent] = [c.event for c in children]
    # The subagent's own calls, in order, each queued, started and finished.
    queued = [e.tool_name for e in inner if isinstance(e, CallQueued)]
    assert queued == ["TodoWrite", "Note"]
    finished = [e for e in inner if isinstance(e, CallFinished)]
    assert [f.status for f in finished] == ["ok", "ok"]
    assert result_text_of(finished[1].result) == "noted hello"
    assert any(isinstance(e, CallStarted) for e in inner)
    progress = [e for e in inner if isinstance(e, CallProgress)]
    assert progress[0].checklist == (ChecklistItem("Note it", "in_progress", "Noting it"),)
    assert (progress[1].text, progress[1].fraction) == ("noting hello", 1.0)
    # Live: every child event arrived before the Agent call finished; nothing else leaked.
    assert all(recorder.when(c) < recorder.when(agent_finished) for c in children)
    assert not any(isinstance(e, ChildEvent) and e.parent_call_id != agent_id for e in inner)
    # The subagent's calls are not reported as the parent's own.
    assert {q.tool_name for q in recorder.of(CallQueued)} == {"Agent"}


async def test_child_events_nest_and_only_tool_events_are_forwarded(tmp_path: Path) -> None:
    """A tool that runs work of its own hands that work's events to `on_child_event`:
    tool-call events (a nested `ChildEvent` too) are wrapped once more; others are dropped,
    and nothing is forwarded once the call has finished."""
    kept: list[Any] = []
    inner_call = ToolCall("toolu_inner", "Deep", {})
    grandchild = ChildEvent("toolu_inner", CallStarted("toolu_deeper", 1.0))

    async def run_work(_input: Empty, context: ToolUseContext) -> str:
        forward = context.on_child_event
        assert forward is not None
        kept.append(forward)
        loop_events: list[LoopEvent] = [
            TextDelta("thinking"),
            CallQueued(inner_call, "Deep", True),
            grandchild,
        ]
        for event in loop_events:
            forward(event)
        thread = threading.Thread(target=forward, args=(CallStarted("toolu_inner", 2.0),))
        thread.start()
        thread.join()
        return "worked"

    tool = build_tool(name="Worker", input_model=Empty, call=run_work, description="w")
    [result], recorder = await run_calls(tmp_path, [tool], ToolCall("toolu_w", "Worker", {}))
    assert result.content == "worked"
    children = recorder.of(ChildEvent)
    assert children[:2] == [
        ChildEvent("toolu_w", CallQueued(inner_call, "Deep", True)),
        ChildEvent("toolu_w", grandchild),
    ]
    assert ChildEvent("toolu_w", CallStarted("toolu_inner", 2.0)) in children
    assert len(children) == 3 and not recorder.of(TextDelta)
    # After the call: its sink forwards nothing more.
    kept[0](CallQueued(ToolCall("late", "Deep", {}), "Deep", True))
    assert len(recorder.of(ChildEvent)) == 3
