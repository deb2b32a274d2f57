"""The loop under faults: cut streams, interrupts, limits and unusual stop reasons.

The real `anthropic` client talks to the loopback server, which validates every request
like the real API; `server.errors == []` proves the conversation stayed valid throughout.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import LoopEvent, Notice, ToolCallStarted
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.hooks.hooks import HookInput, HookOutput, Hooks
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelError
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"


class EchoInput(BaseModel):
    text: str


class WaitInput(BaseModel):
    seconds: float


def tools(ran: list[str], *, behavior: str = "cancel") -> list[Tool[Any]]:
    def echo(input: EchoInput, context: ToolUseContext) -> str:
        ran.append(input.text)
        return f"echo: {input.text}"

    async def wait(input: WaitInput, context: ToolUseContext) -> str:
        ran.append(f"wait {input.seconds}")
        await asyncio.sleep(input.seconds)
        ran.append(f"waited {input.seconds}")
        return f"waited {input.seconds}"

    return [
        build_tool(
            name="Echo",
            input_model=EchoInput,
            call=echo,
            description="Echo.",
            concurrency_safe=True,
        ),
        build_tool(
            name="Wait",
            input_model=WaitInput,
            call=wait,
            description="Wait.",
            concurrency_safe=True,
            interrupt_behavior=behavior,  # type: ignore[arg-type]
        ),
    ]


def session_for(server: MessagesServer, tmp_path: Path, ran: list[str], **options: Any) -> Session:
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    # These tests are about the loop, not permissions: every call may run.
    options.setdefault("permission_mode", "bypassPermissions")
    return Session(
        tools=tools(ran),
        model=model,
        model_id=MODEL,
        cwd=tmp_path,
        retry_backoff_s=0.01,
        **options,
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b["type"] == kind]


async def test_stream_cut_before_any_call_completes_is_retried(tmp_path: Path) -> None:
    ran: list[str] = []
    notices: list[LoopEvent] = []
    cut = Turn([text("Echoing"), tool_use("Echo", {"text": "hi"})], cut_mid_block=True)
    script = [cut, Turn([text("Echoing"), tool_use("Echo", {"text": "hi"})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, ran, on_event=notices.append)
        result = await session.run("echo hi")

    assert server.errors == []
    assert result == "ok"
    assert ran == ["hi"]  # the cut message's call never ran; the retry's ran once
    assert len(bodies(server)) == 3
    assert bodies(server)[0]["messages"] == bodies(server)[1]["messages"]  # the same request
    assert any(isinstance(e, Notice) and e.kind == "retry" for e in notices)


async def test_clean_cut_fragment_is_not_taken_for_an_answer(tmp_path: Path) -> None:
    ran: list[str] = []
    script = [
        Turn([text("partial answer")], cut_after_blocks=1, clean_cut=True),
        Turn([text("full")]),
    ]
    with MessagesServer(script) as server:
        result = await session_for(server, tmp_path, ran).run("hi")

    assert server.errors == []
    assert result == "full"


async def test_stream_cut_after_calls_keeps_what_ran_and_runs_nothing_twice(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    content = [
        text("Two echoes."),
        tool_use("Echo", {"text": "first"}),
        tool_use("Echo", {"text": "second"}),
        tool_use("Echo", {"text": "third"}),
    ]
    script = [Turn(content, cut_after_blocks=3), Turn([text("Recovered.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, ran)
        result = await session.run("echo")

    assert server.errors == []
    assert result == "Recovered."
    # "first" and "second" each started at their own content_block_stop (their input JSON
    # was whole and valid), so both ran before the break; "third" never arrived. A block
    # not known whole when the stream broke is answered "Not run"
    # (tests/agent/test_stream_start.py).
    assert ran == ["first", "second"]
    assistant, answers = bodies(server)[1]["messages"][1:]
    assert [b["input"]["text"] for b in blocks(assistant, "tool_use")] == ["first", "second"]
    first, second = blocks(answers, "tool_result")
    assert first == {"type": "tool_result", "tool_use_id": "toolu_01", "content": "echo: first"}
    assert second == {"type": "tool_result", "tool_use_id": "toolu_02", "content": "echo: second"}
    assert "cut off" in blocks(answers, "text")[0]["text"]


async def test_stream_that_keeps_breaking_gives_up_with_a_clear_error(tmp_path: Path) -> None:
    ran: list[str] = []
    cut = Turn([tool_use("Echo", {"text": "x"})], cut_mid_block=True)
    with MessagesServer([cut, cut, cut]) as server:
        session = session_for(server, tmp_path, ran, stream_retries=2)
        with pytest.raises(ModelError, match="broke 3 times"):
            await session.run("echo")
        server.add_turns(Turn([text("back")]))
        assert await session.run("again") == "back"

    assert server.errors == []
    assert ran == []


async def test_interrupt_mid_tool_leaves_a_valid_conversation(tmp_path: Path) -> None:
    ran: list[str] = []
    started = asyncio.Event()

    def on_event(event: LoopEvent) -> None:
        if isinstance(event, ToolCallStarted):
            started.set()

    script = [Turn([text("Waiting."), tool_use("Wait", {"seconds": 30})])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, ran, on_event=on_event)
        task = asyncio.create_task(session.run("wait long"))
        await asyncio.wait_for(started.wait(), 10)
        began = time.perf_counter()
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        stopped_in = time.perf_counter() - began

        assert stopped_in < 2.0  # a "cancel" tool stops at once, not after 30 s
        assert ran == ["wait 30.0"]
        last = session.messages[-1]
        assert last["role"] == "user"
        (answer,) = blocks(last, "tool_result")
        assert answer["is_error"] and "nterrupted" in answer["content"]

        server.add_turns(Turn([text("Fine.")]))
        assert await session.run("never mind") == "Fine."

    assert server.errors == []
    joined = bodies(server)[-1]["messages"][2]
    assert [b["type"] for b in joined["content"]] == ["tool_result", "text"]
    assert joined["content"][1]["text"] == "never mind"


async def test_time_budget_interrupts_the_run(tmp_path: Path) -> None:
    ran: list[str] = []
    script = [Turn([tool_use("Wait", {"seconds": 30})]), Turn([text("after")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, ran, time_budget_s=1.0)
        result = await session.run("wait")
        assert result.stop_reason == "time_budget"
        assert session.messages[-1]["role"] == "user"
        session.settings.time_budget_s = None
        assert await session.run("") == "after"  # an empty prompt continues

    assert server.errors == []


async def test_max_turns_stops_the_run_and_the_next_run_continues(tmp_path: Path) -> None:
    ran: list[str] = []
    script = [Turn([tool_use("Echo", {"text": str(n)})]) for n in range(3)]
    with MessagesServer([*script, Turn([text("done")])]) as server:
        session = session_for(server, tmp_path, ran, max_turns=2)
        result = await session.run("loop")
        assert (result.stop_reason, result.turns, ran) == ("max_turns", 2, ["0", "1"])
        assert session.messages[-1]["role"] == "user"
        session.settings.max_turns = 5
        assert await session.run("go on") == "done"

    assert server.errors == []
    assert ran == ["0", "1", "2"]


async def test_max_tokens_cut_tool_use_is_answered_not_run(tmp_path: Path) -> None:
    ran: list[str] = []
    notices: list[LoopEvent] = []
    cut = Turn([text("I will echo"), tool_use("Echo", {"text": "cut"})], stop_reason="max_tokens")
    with MessagesServer([cut, Turn([text("ok")])]) as server:
        session = session_for(server, tmp_path, ran, on_event=notices.append)
        result = await session.run("echo")
        assert (result.stop_reason, result.text) == ("max_tokens", "I will echo")
        assert await session.run("again") == "ok"

    assert server.errors == []
    assert ran == []
    (answer,) = blocks(session.messages[2], "tool_result")
    assert answer["is_error"] and "max_tokens" in answer["content"]
    assert any(isinstance(e, Notice) and e.kind == "max_tokens" for e in notices)


async def test_pause_turn_continues_the_same_assistant_message(tmp_path: Path) -> None:
    ran: list[str] = []
    script = [Turn([text("Searching...")], stop_reason="pause_turn"), Turn([text("Found it.")])]
    with MessagesServer(script) as server:
        result = await (session := session_for(server, tmp_path, ran)).run("find")

    assert server.errors == []
    assert (result, result.stop_reason) == ("Found it.", "end_turn")
    assert bodies(server)[1]["messages"][-1]["role"] == "assistant"
    assert session.messages[-1]["content"] == [
        {"type": "text", "text": "Searching..."},
        {"type": "text", "text": "Found it."},
    ]


async def test_refusal_ends_the_run(tmp_path: Path) -> None:
    ran: list[str] = []
    with MessagesServer([Turn([text("No.")], stop_reason="refusal")]) as server:
        result = await session_for(server, tmp_path, ran).run("bad")

    assert server.errors == []
    assert (result, result.stop_reason) == ("No.", "refusal")


async def test_hook_context_follows_the_tool_results(tmp_path: Path) -> None:
    ran: list[str] = []
    hooks = Hooks()

    def remind(hook_input: HookInput) -> HookOutput:
        return HookOutput(additional_context=(f"Remember {hook_input.tool_name}.",))

    hooks.add("PostToolUse", remind)
    script = [Turn([tool_use("Echo", {"text": "a"}), tool_use("Echo", {"text": "b"})])]
    with MessagesServer([*script, Turn([text("ok")])]) as server:
        await session_for(server, tmp_path, ran, hooks=hooks).run("echo")

    assert server.errors == []
    answer = bodies(server)[1]["messages"][-1]["content"]
    assert [b["type"] for b in answer] == ["tool_result", "tool_result", "text", "text"]
    assert answer[2] == {"type": "text", "text": "Remember Echo."}
