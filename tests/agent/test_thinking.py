"""Extended thinking in the loop: the real `anthropic` client against the loopback server.

The server signs every thinking block it issues and refuses, as the Messages API does, a
request whose open tool-use chain does not start with one, or whose blocks were changed.
So `server.errors == []` in a test proves the loop kept every thinking block byte for byte
and in its place, through tool turns, interrupts, compaction, resume and replay.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import (
    LoopEvent,
    ThinkingDelta,
    ThinkingStarted,
    ToolCallStarted,
    UsageReported,
)
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelAPIError, Usage
from jupyter_toolhost.model.cassette import CassetteModel
from jupyter_toolhost.model.pricing import estimate_cost
from jupyter_toolhost.testing import (
    MessagesServer,
    Turn,
    redacted_thinking,
    text,
    thinking,
    tool_use,
)

MODEL = "claude-sonnet-4-5"
THINK = {"type": "enabled", "budget_tokens": 2048}


class WaitInput(BaseModel):
    seconds: float


class Log:
    """Events and tool starts, with their times."""

    def __init__(self) -> None:
        self.events: list[tuple[float, LoopEvent]] = []
        self.ran: list[tuple[float, float]] = []
        self.started = asyncio.Event()

    def __call__(self, event: LoopEvent) -> None:
        self.events.append((time.perf_counter(), event))
        if isinstance(event, ToolCallStarted):
            self.started.set()

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for _, event in self.events if isinstance(event, kind)]

    def first(self, kind: type[Any]) -> float:
        return next(at for at, event in self.events if isinstance(event, kind))


def wait_tool(log: Log) -> Tool[WaitInput]:
    async def wait(input: WaitInput, context: ToolUseContext) -> str:
        log.ran.append((input.seconds, time.perf_counter()))
        await asyncio.sleep(input.seconds)
        return f"waited {input.seconds}"

    return build_tool(
        name="Wait",
        input_model=WaitInput,
        call=wait,
        description="Wait a while.",
        read_only=True,
        concurrency_safe=True,
        interrupt_behavior="cancel",
    )


def session_for(server: MessagesServer, tmp_path: Path, log: Log, **options: Any) -> Session:
    if "model" not in options:
        options["model"] = AnthropicModel(base_url=server.base_url, api_key="test-key")
    options.setdefault("thinking", THINK)
    return Session(
        tools=[wait_tool(log)],
        model_id=MODEL,
        cwd=tmp_path,
        permission_mode="bypassPermissions",
        retry_backoff_s=0.01,
        on_event=log,
        **options,
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def types(message: dict[str, Any]) -> list[str]:
    return [block["type"] for block in message["content"]]


def issued(server: MessagesServer, kind: str = "thinking") -> list[dict[str, Any]]:
    """Every block of `kind` the server sent, as the next request carried it back."""
    return [
        block
        for body in bodies(server)
        for message in body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == kind
    ]


async def test_thinking_with_parallel_tool_use_then_the_answer(tmp_path: Path) -> None:
    log = Log()
    script = [
        Turn(
            [
                thinking("Two waits can run together."),
                tool_use("Wait", {"seconds": 0.5}),
                tool_use("Wait", {"seconds": 0.5}),
            ]
        ),
        Turn([thinking("Both finished."), text("Done waiting.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log)
        result = await session.run("wait twice")

    assert server.errors == []
    assert result == "Done waiting."
    first, second = bodies(server)
    # The thinking object goes as given; max_tokens leaves the answer its 8192 tokens.
    assert first["thinking"] == THINK and second["thinking"] == THINK
    assert first["max_tokens"] == second["max_tokens"] == 8192 + 2048
    assert "context_management" not in first
    # The block the server issued came back unchanged, at the head of its message.
    sent_back = second["messages"][1]
    assert types(sent_back) == ["thinking", "tool_use", "tool_use"]
    block = sent_back["content"][0]
    assert block["thinking"] == "Two waits can run together."
    assert server.signer.valid_signature(block["thinking"], block["signature"])
    assert session.messages[1] == sent_back
    assert types(session.messages[3]) == ["thinking", "text"]
    # Both calls ran together (one after the other would start them 0.5 s apart).
    (_, start_a), (_, start_b) = log.ran
    assert abs(start_a - start_b) < 0.4
    # Events: a start per block, the text as it streamed (never mixed into TextDelta).
    assert log.of(ThinkingStarted) == [ThinkingStarted(False), ThinkingStarted(False)]
    thought = "".join(delta.text for delta in log.of(ThinkingDelta))
    assert thought == "Two waits can run together.Both finished."
    # Thinking tokens are counted apart, summed, and billed once, as output.
    usages = [event.usage for event in log.of(UsageReported)]
    assert all(u.thinking_tokens > 0 for u in usages)
    assert result.usage.thinking_tokens == sum(u.thinking_tokens for u in usages)
    assert session.usage.thinking_tokens == result.usage.thinking_tokens
    assert result.usage.thinking_tokens <= result.usage.output_tokens
    no_thinking = Usage(
        result.usage.input_tokens,
        result.usage.output_tokens,
        result.usage.cache_creation_input_tokens,
        result.usage.cache_read_input_tokens,
    )
    assert result.cost_usd == pytest.approx(estimate_cost(MODEL, no_thinking))
    # The transcript keeps the usage with its thinking tokens.
    records = [json.loads(line) for line in session.transcript_path.read_text().splitlines()]
    assert sum(r["usage"].get("thinking_tokens", 0) for r in records if r["type"] == "usage") == (
        result.usage.thinking_tokens
    )


async def test_safe_calls_start_while_a_thinking_then_tool_use_message_streams(
    tmp_path: Path,
) -> None:
    log = Log()
    slow = Turn(
        [
            thinking("Start the first wait at once."),
            tool_use("Wait", {"seconds": 0.05}),
            tool_use("Wait", {"seconds": 0.05}),
            text("Both asked for."),
            text("More to say."),
        ],
        block_delay=0.4,
    )
    with MessagesServer([slow, Turn([thinking("ok"), text("done")])]) as server:
        session = session_for(server, tmp_path, log)
        assert await session.run("wait") == "done"

    assert server.errors == []
    first_call = log.ran[0][1]
    message_done = log.first(UsageReported)  # reported once the whole message arrived
    # At least two more blocks (0.4 s apart) streamed after the first call had started.
    assert message_done - first_call > 0.5


async def test_interrupt_mid_tool_then_the_next_prompt(tmp_path: Path) -> None:
    log = Log()
    with MessagesServer([Turn([thinking("A long wait."), tool_use("Wait", {"seconds": 30})])]) as (
        server
    ):
        session = session_for(server, tmp_path, log)
        task = asyncio.create_task(session.run("wait long"))
        await asyncio.wait_for(log.started.wait(), 10)
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert types(session.messages[1]) == ["thinking", "tool_use"]
        assert session.messages[-1]["role"] == "user"
        server.add_turns(Turn([thinking("The user moved on."), text("Fine.")]))
        assert await session.run("never mind") == "Fine."

    assert server.errors == []  # the chain after the interrupt still starts with its thought
    last = bodies(server)[-1]
    assert types(last["messages"][1]) == ["thinking", "tool_use"]
    assert types(last["messages"][2]) == ["tool_result", "text"]


async def test_interrupt_after_the_thought_before_any_tool_use(tmp_path: Path) -> None:
    log = Log()
    thought_seen = asyncio.Event()

    def on_event(event: LoopEvent) -> None:
        if isinstance(event, ThinkingDelta):
            thought_seen.set()

    slow = Turn([thinking("Let me wait."), tool_use("Wait", {"seconds": 1})], block_delay=3.0)
    with MessagesServer([slow]) as server:
        session = session_for(server, tmp_path, log)
        task = asyncio.create_task(session.run("wait", on_event=on_event))
        await asyncio.wait_for(thought_seen.wait(), 10)
        await asyncio.sleep(0.2)  # the thinking block is complete; the tool_use is not
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        # A thought alone is not kept: the conversation may not end on it.
        assert [m["role"] for m in session.messages] == ["user"]
        server.add_turns(Turn([thinking("Fresh start."), text("Ok.")]))
        assert await session.run("") == "Ok."  # an empty prompt continues from there
        server.add_turns(Turn([thinking("Again."), text("Ok again.")]))
        assert await session.run("and now?") == "Ok again."

    assert server.errors == []
    assert log.ran == []


async def test_redacted_thinking_goes_back_unchanged(tmp_path: Path) -> None:
    log = Log()
    script = [
        Turn(
            [redacted_thinking("sealed"), thinking("And more."), tool_use("Wait", {"seconds": 0})]
        ),
        Turn([redacted_thinking(), text("Done.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log)
        assert await session.run("think hard") == "Done."

    assert server.errors == []
    assert types(session.messages[1]) == ["redacted_thinking", "thinking", "tool_use"]
    data = session.messages[1]["content"][0]["data"]
    assert server.signer.valid_data(data)
    assert issued(server, "redacted_thinking") == [session.messages[1]["content"][0]]
    assert log.of(ThinkingStarted)[:2] == [ThinkingStarted(True), ThinkingStarted(False)]
    assert "".join(d.text for d in log.of(ThinkingDelta)) == "And more."


async def test_display_omitted_keeps_the_empty_signed_block(tmp_path: Path) -> None:
    log = Log()
    hidden = {"type": "enabled", "budget_tokens": 31999, "display": "omitted"}
    context_management = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    script = [
        Turn([thinking("secret plan"), tool_use("Wait", {"seconds": 0})]),
        Turn([thinking("secret end"), text("Done.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(
            server, tmp_path, log, thinking=hidden, context_management=context_management
        )
        assert await session.run("go") == "Done."

    assert server.errors == []
    block = session.messages[1]["content"][0]
    assert block["thinking"] == "" and block["signature"]
    assert log.of(ThinkingDelta) == []
    assert len(log.of(ThinkingStarted)) == 2
    # Claude Code's shape: the beta field goes with its anthropic-beta header.
    requests = [r for r in server.requests if r.path == "/v1/messages"]
    assert all(r.body["context_management"] == context_management for r in requests)
    assert all("context-management-2025-06-27" in r.headers["anthropic-beta"] for r in requests)
    assert requests[0].body["max_tokens"] == 8192 + 31999


async def test_compaction_keeps_an_open_chain_and_drops_settled_thoughts(tmp_path: Path) -> None:
    log = Log()
    script = [
        Turn([thinking("First turn."), tool_use("Wait", {"seconds": 0})]),
        Turn([thinking("First done."), text("One.")]),
        # Second prompt: a chain is open when auto compaction runs before its next request.
        Turn(
            [thinking("Second turn."), tool_use("Wait", {"seconds": 0})],
            cache_read_input_tokens=50_000,
        ),
        Turn([text("Summary: two prompts, two waits.")]),  # the summary (no thinking asked)
        Turn([thinking("After the summary."), text("Two.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log, compact_threshold_tokens=10_000)
        assert await session.run("one") == "One."
        assert await session.run("two") == "Two."

    assert server.errors == []
    summary_request = bodies(server)[3]
    assert "thinking" not in summary_request
    assert summary_request["max_tokens"] == session.settings.compact_max_tokens
    sent = [types(m) for m in summary_request["messages"] if m["role"] == "assistant"]
    # The settled first turn lost its thoughts; the open chain kept its own, in place.
    assert sent == [["tool_use"], ["text"], ["thinking", "tool_use"]]
    assert len(session.compact_boundaries) == 1
    assert [m["role"] for m in session.messages] == ["user", "assistant"]
    assert types(session.messages[1]) == ["thinking", "text"]


async def test_resume_keeps_the_open_chain_and_drops_settled_thoughts(tmp_path: Path) -> None:
    log = Log()
    script = [
        Turn([thinking("One."), tool_use("Wait", {"seconds": 0})]),
        Turn([thinking("Done one."), text("First.")]),
        Turn([thinking("Long one."), tool_use("Wait", {"seconds": 30})]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log)
        assert await session.run("first") == "First."
        log.started.clear()
        task = asyncio.create_task(session.run("second"))
        await asyncio.wait_for(log.started.wait(), 10)
        session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task

        resumed = Session.resume(
            session.session_id,
            tools=[wait_tool(log)],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            thinking=THINK,
        )
        assert [types(m) for m in resumed.messages if m["role"] == "assistant"] == [
            ["tool_use"],
            ["text"],
            ["thinking", "tool_use"],
        ]
        chain = resumed.messages[-2]["content"][0]
        assert chain == session.messages[-2]["content"][0]  # byte for byte
        assert resumed.usage.thinking_tokens == session.usage.thinking_tokens > 0
        server.add_turns(Turn([thinking("Resumed."), text("Back.")]))
        assert await resumed.run("go on") == "Back."

    assert server.errors == []


async def test_cassette_records_and_replays_thinking(tmp_path: Path) -> None:
    cassette = tmp_path / "thinking.json"
    script = [
        Turn([thinking("Plan: one wait."), tool_use("Wait", {"seconds": 0})]),
        Turn([redacted_thinking(), thinking("Done."), text("Waited.")]),
    ]
    recorded_log = Log()
    with MessagesServer(script) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        recorder = CassetteModel(cassette, mode="record", inner=inner, source="scripted")
        recorded = session_for(server, tmp_path / "a", recorded_log, model=recorder)
        assert await recorded.run("wait once") == "Waited."
    assert server.errors == []
    data = json.loads(cassette.read_text())
    assert data["source"]["kind"] == "scripted"
    stored = [b["type"] for i in data["interactions"] for b in i["response"]["content"]]
    assert stored == ["thinking", "tool_use", "redacted_thinking", "thinking", "text"]

    replay_log = Log()
    replay = CassetteModel(cassette, mode="replay")
    replayed = Session(
        tools=[wait_tool(replay_log)],
        model=replay,
        model_id=MODEL,
        cwd=tmp_path / "a",
        permission_mode="bypassPermissions",
        thinking=THINK,
        on_event=replay_log,
    )
    assert await replayed.run("wait once") == "Waited."  # no server: offline
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
    assert replay.remaining == 0

    def thinking_events(log: Log) -> list[Any]:
        return [e for _, e in log.events if isinstance(e, ThinkingStarted | ThinkingDelta)]

    assert thinking_events(replay_log) == thinking_events(recorded_log)
    assert thinking_events(replay_log)[0] == ThinkingStarted(False)


async def test_subagents_think_as_their_session_does(tmp_path: Path) -> None:
    from session_support import Router

    from jupyter_toolhost.tools import agent

    router = Router(
        {
            "MAIN": [
                Turn(
                    [
                        thinking("Delegate."),
                        tool_use("Agent", {"description": "d", "prompt": "SUB: go"}),
                    ]
                ),
                Turn([thinking("Got it."), text("Main done.")]),
            ],
            "SUB": [
                Turn([thinking("Sub plan."), tool_use("Wait", {"seconds": 0})]),
                Turn([thinking("Sub done."), text("Sub report.")]),
            ],
        }
    )
    log = Log()
    with MessagesServer(router) as server:
        session = Session(
            tools=[agent.make_tool(), wait_tool(log)],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            thinking=THINK,
        )
        assert await session.run("MAIN: delegate") == "Main done."

    assert server.errors == []
    sub_requests = router.seen["SUB"]
    assert len(sub_requests) == 2
    assert all(body["thinking"] == THINK for body in sub_requests)
    assert types(sub_requests[1]["messages"][1]) == ["thinking", "tool_use"]
    # The subagent's thoughts stay in its own conversation.
    assert "Sub plan." not in json.dumps(session.messages)


async def test_thinking_can_be_turned_on_between_runs(tmp_path: Path) -> None:
    log = Log()
    script = [Turn([text("Plain.")]), Turn([thinking("Now thinking."), text("Thought.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log, thinking=None)
        assert await session.run("one") == "Plain."
        session.settings.thinking = THINK
        assert await session.run("two") == "Thought."

    assert server.errors == []
    first, second = bodies(server)
    assert "thinking" not in first and first["max_tokens"] == 8192
    assert second["thinking"] == THINK and second["max_tokens"] == 8192 + 2048


async def test_broken_streams_and_max_tokens_keep_the_thought_at_the_head(tmp_path: Path) -> None:
    log = Log()
    script = [
        # Broken after the thought alone: nothing ran, so the request is sent again.
        Turn([thinking("Try one."), tool_use("Wait", {"seconds": 0})], cut_after_blocks=1),
        # Broken after a whole call: it is kept (and answered), the loop goes on.
        Turn(
            [
                thinking("Try two."),
                tool_use("Wait", {"seconds": 0}),
                tool_use("Wait", {"seconds": 0}),
            ],
            cut_after_blocks=2,
        ),
        Turn([thinking("Go on."), text("Cut short.")]),
        # A max_tokens stop that cuts the last call: answered as not run, the chain is open.
        Turn([thinking("Long."), tool_use("Wait", {"seconds": 0})], stop_reason="max_tokens"),
        Turn([thinking("Next prompt."), text("Fine.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, log)
        assert await session.run("wait") == "Cut short."
        result = await session.run("again")
        assert result.stop_reason == "max_tokens"
        assert types(session.messages[-2]) == ["thinking", "tool_use"]
        assert await session.run("and now") == "Fine."

    assert server.errors == []
    kept = [m for m in session.messages if m["role"] == "assistant"]
    assert [types(m) for m in kept] == [
        ["thinking", "tool_use"],
        ["thinking", "text"],
        ["thinking", "tool_use"],
        ["thinking", "text"],
    ]
    assert kept[0]["content"][0]["thinking"] == "Try two."
    assert len(log.ran) == 1  # the whole call of the broken stream; the cut one never ran


async def test_bad_thinking_set_between_runs_fails_clearly_and_loses_nothing(
    tmp_path: Path,
) -> None:
    log = Log()
    with MessagesServer([Turn([thinking("ok"), text("Works.")])]) as server:
        session = session_for(server, tmp_path, log, max_tokens=1000)
        session.settings.thinking = {"type": "enabled", "budget_tokens": 100}  # careless
        with pytest.raises(ModelAPIError, match="greater than or equal to 1024"):
            await session.run("first")
        session.settings.thinking = THINK
        assert await session.run("second") == "Works."

    assert server.errors[0].status == 400
    prompts = [b["text"] for b in bodies(server)[-1]["messages"][0]["content"]]
    assert prompts == ["first", "second"]  # the first prompt was kept, not lost


async def test_interrupt_mid_stream_after_thought_and_call(tmp_path: Path) -> None:
    log = Log()
    slow = Turn(
        [thinking("Wait, then say so."), tool_use("Wait", {"seconds": 30}), text("Waiting...")],
        block_delay=1.0,
    )
    with MessagesServer([slow]) as server:
        session = session_for(server, tmp_path, log)
        task = asyncio.create_task(session.run("wait"))
        await asyncio.wait_for(log.started.wait(), 10)
        assert session.interrupt()  # the call runs; the message has not finished streaming
        with pytest.raises(asyncio.CancelledError):
            await task
        server.add_turns(Turn([thinking("Stopped."), text("Stopped.")]))
        assert await session.run("stop") == "Stopped."

    assert server.errors == []
    assert types(session.messages[1])[:2] == ["thinking", "tool_use"]
    assert session.messages[1]["content"][0]["thinking"] == "Wait, then say so."
