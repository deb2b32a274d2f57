"""A prompt sent while another runs: it is queued, both prompts' sinks are told, and it runs
after the running one as a turn of its own. The real Session on the real `anthropic`
client against the loopback Messages API server; a scheduled CronCreate prompt firing
during a run is the realistic case in a notebook, concurrent `Session.run` calls in code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost import Session
from jupyter_toolhost.agent.events import LoopEvent, Notice, TextDelta
from jupyter_toolhost.core.tool import Tool, tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import cron
from jupyter_toolhost.tools.cron import MIN_INTERVAL_KEY, scheduler

MODEL = "claude-sonnet-4-5"
Step = Turn | Callable[[dict[str, Any]], Turn]


class ByPrompt:
    """Answers each request from the steps of the newest prompt (a marker in a user text
    block) the conversation holds; records the bodies it saw."""

    def __init__(self, routes: dict[str, list[Step]]) -> None:
        self.routes = {key: list(steps) for key, steps in routes.items()}
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Turn:
        self.bodies.append(body)
        for message in reversed(body["messages"]):
            if message["role"] != "user":
                continue
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks:
                for key, steps in self.routes.items():
                    if block.get("type") == "text" and key in block.get("text", ""):
                        step = steps.pop(0)
                        return step if isinstance(step, Turn) else step(body)
        raise AssertionError("no known prompt in the conversation")


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text blocks people (or schedules) sent, in conversation order."""
    found: list[str] = []
    for message in messages:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, list):
            found += [b["text"] for b in content if b.get("type") == "text"]
    return [t for t in found if "deferred tools are available" not in t]


def notices(events: list[LoopEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.kind == "queued"]


def holding_tool(release: asyncio.Event, started: asyncio.Event) -> Tool[Any]:
    @tool(name="Hold", read_only=True, interrupt_behavior="cancel", register=False)
    async def hold() -> str:
        """Wait until the test says so."""
        started.set()
        await release.wait()
        return "released"

    return hold


def make_session(server: MessagesServer, cwd: Path, tools: list[Tool[Any]], **kw: Any) -> Session:
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    return Session(
        tools=tools,
        model=model,
        model_id=MODEL,
        cwd=cwd,
        permission_mode="bypassPermissions",
        load_settings=False,
        retry_backoff_s=0.01,
        **kw,
    )


async def test_a_second_run_is_queued_and_both_prompts_are_told(tmp_path: Path) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    script = ByPrompt(
        {
            "FIRST": [Turn([tool_use("Hold", {})]), Turn([text("first done")])],
            "SECOND": [Turn([text("second done")])],
            "THIRD": [Turn([text("third done")])],
        }
    )
    everything: list[LoopEvent] = []
    first_events: list[LoopEvent] = []
    second_events: list[LoopEvent] = []
    third_events: list[LoopEvent] = []
    with MessagesServer(script) as server:
        session = make_session(
            server, tmp_path, [holding_tool(release, started)], on_event=everything.append
        )
        first = asyncio.create_task(session.run("FIRST", on_event=first_events.append))
        await asyncio.wait_for(started.wait(), 10)
        assert session.running and session.queued_prompts == 0
        second = asyncio.create_task(session.run("SECOND", on_event=second_events.append))
        third = asyncio.create_task(session.run("THIRD\nmore lines", on_event=third_events.append))
        await asyncio.sleep(0.2)
        assert session.queued_prompts == 2 and not second.done() and not third.done()
        queued_second = "Queued behind the running prompt: 'SECOND' starts when it ends."
        queued_third = "Queued behind the running prompt and 1 more: 'THIRD' starts when it ends."
        # The running prompt's sink hears of both; each queued prompt hears of itself.
        assert notices(first_events) == [queued_second, queued_third]
        assert notices(second_events) == [queued_second]
        assert notices(third_events) == [queued_third]
        release.set()
        assert await asyncio.wait_for(first, 10) == "first done"
        assert await asyncio.wait_for(second, 10) == "second done"
        assert await asyncio.wait_for(third, 10) == "third done"
    assert server.errors == []
    assert not session.running and session.queued_prompts == 0
    # The queued prompt is told when it starts, before any of its own text streams.
    started_second = "Started the queued prompt 'SECOND'."
    assert notices(second_events) == [queued_second, started_second]
    assert second_events.index(Notice("queued", started_second)) < next(
        i for i, e in enumerate(second_events) if isinstance(e, TextDelta)
    )
    assert notices(first_events) == [queued_second, queued_third]  # nothing after it ended
    # The session's own sink heard every notice exactly once (no duplicates).
    assert notices(everything) == [
        queued_second,
        queued_third,
        started_second,
        "Started the queued prompt 'THIRD'.",
    ]
    # First come, first served, and nothing interleaved: each prompt came after the
    # previous one's answer, as a turn of its own.
    assert user_texts(session.messages) == ["FIRST", "SECOND", "THIRD\nmore lines"]
    assert [len(b["messages"]) for b in script.bodies] == [1, 3, 5, 7]
    answers = [m for m in session.messages if m["role"] == "assistant"]
    assert [b.get("text") for m in answers for b in m["content"] if b["type"] == "text"] == [
        "first done",
        "second done",
        "third done",
    ]


async def test_a_cancelled_waiting_prompt_leaves_the_queue(tmp_path: Path) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    script = ByPrompt(
        {
            "FIRST": [Turn([tool_use("Hold", {})]), Turn([text("first done")])],
            "LATER": [Turn([text("later done")])],
        }
    )
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, [holding_tool(release, started)])
        first = asyncio.create_task(session.run("FIRST"))
        await asyncio.wait_for(started.wait(), 10)
        waiting = asyncio.create_task(session.run("NEVER SENT"))
        await asyncio.sleep(0.05)
        assert session.queued_prompts == 1
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert session.queued_prompts == 0
        release.set()
        assert await asyncio.wait_for(first, 10) == "first done"
        # The lock was not leaked: a later prompt runs at once, and is not "queued".
        later: list[LoopEvent] = []
        assert await asyncio.wait_for(session.run("LATER", on_event=later.append), 10) == (
            "later done"
        )
        assert notices(later) == []
    assert server.errors == []
    assert user_texts(session.messages) == ["FIRST", "LATER"]


async def test_interrupt_stops_the_running_prompt_and_the_queued_one_runs(tmp_path: Path) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    script = ByPrompt(
        {"FIRST": [Turn([tool_use("Hold", {})])], "SECOND": [Turn([text("second done")])]}
    )
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, [holding_tool(release, started)])
        first = asyncio.create_task(session.run("FIRST"))
        await asyncio.wait_for(started.wait(), 10)
        second = asyncio.create_task(session.run("SECOND"))
        await asyncio.sleep(0.05)
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await asyncio.wait_for(second, 10) == "second done"
    assert server.errors == []  # the loopback server validates every conversation it gets
    # The interrupted call was answered; the queued prompt joined that user message.
    joined = session.messages[2]
    assert joined["role"] == "user"
    assert [b["type"] for b in joined["content"]] == ["tool_result", "text"]
    assert joined["content"][1]["text"] == "SECOND"


async def test_a_scheduled_prompt_firing_during_a_run_is_queued_and_shown(tmp_path: Path) -> None:
    """CronCreate with the session's own `run_prompt` (what the CLI and plain Python get):
    the firing waits for the running prompt, whose sink shows the queued notice."""
    told = asyncio.Event()
    running_events: list[LoopEvent] = []

    def sink(event: LoopEvent) -> None:
        running_events.append(event)
        if isinstance(event, Notice) and event.kind == "queued":
            told.set()

    @tool(name="WaitForNotice", read_only=True, register=False)
    async def wait_for_notice() -> str:
        """Wait until the scheduled prompt has been queued."""
        await asyncio.wait_for(told.wait(), 10)
        return "the scheduled prompt is queued"

    script = ByPrompt(
        {
            "MAIN": [
                Turn(
                    [
                        tool_use(
                            "CronCreate",
                            {"cron": "@every 0.2s", "prompt": "CRON-PING", "recurring": False},
                        )
                    ]
                ),
                Turn([tool_use("WaitForNotice", {})]),
                Turn([text("main done")]),
            ],
            "CRON-PING": [Turn([text("pong")])],
        }
    )
    session_events: list[LoopEvent] = []
    with MessagesServer(script) as server:
        session = make_session(
            server, tmp_path, [*cron.make_tools(), wait_for_notice], on_event=session_events.append
        )
        session.context.options.extras[MIN_INTERVAL_KEY] = 0.1
        assert await asyncio.wait_for(session.run("MAIN", on_event=sink), 10) == "main done"
        for _ in range(100):  # the firing runs in the scheduler's task, after the main prompt
            if len(session.messages) >= 8 and not session.running:
                break
            await asyncio.sleep(0.05)
        scheduler(session.context).clear()
    assert server.errors == []
    queued = "Queued behind the running prompt: 'CRON-PING' starts when it ends."
    assert notices(running_events) == [queued]
    assert notices(session_events) == [queued, "Started the queued prompt 'CRON-PING'."]
    # The scheduled prompt came after the main prompt's answer, never inside it.
    assert user_texts(session.messages) == ["MAIN", "CRON-PING"]
    last = session.messages[-1]
    assert last["role"] == "assistant" and last["content"][0]["text"] == "pong"


async def test_close_drops_the_queued_prompts_before_they_start(tmp_path: Path) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    script = ByPrompt({"FIRST": [Turn([tool_use("Hold", {})]), Turn([text("first done")])]})
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, [holding_tool(release, started)])

        async def run_then_close() -> str:  # as the CLI does: close right after its prompt
            answer = await session.run("FIRST")
            await session.close()
            return answer

        first = asyncio.create_task(run_then_close())
        await asyncio.wait_for(started.wait(), 10)
        queued = asyncio.create_task(session.run("DROPPED"))
        await asyncio.sleep(0.05)
        release.set()
        assert await asyncio.wait_for(first, 10) == "first done"
        with pytest.raises(asyncio.CancelledError):
            await queued
        await asyncio.sleep(0.1)
    assert server.errors == [] and len(script.bodies) == 2  # DROPPED never reached the API
    assert user_texts(session.messages) == ["FIRST"]
    assert not session.running and session.queued_prompts == 0
