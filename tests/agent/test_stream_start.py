"""A streamed tool call starts at its own `content_block_stop` when its input is provably
whole, and a `max_tokens` cut still never runs.

The real `anthropic` client talks to the loopback server. A `Hold` after a block makes the
server wait, before it sends the next event, until a tool has started (or the hold times
out): `hold.released == [True]` proves the call started before the next event existed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, model_validator

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import LoopEvent, Notice, ToolCallQueued
from jupyter_toolhost.agent.loop_state import CUT_BY_MAX_TOKENS, NOT_STARTED
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel, input_is_whole
from jupyter_toolhost.model.cassette import CassetteMismatch, CassetteModel
from jupyter_toolhost.model.cassette_format import LAST_INPUT_COMPLETE
from jupyter_toolhost.testing import Hold, MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"
QUICK = 0.3
"""How long a hold waits for a call that must not start early."""


class EchoInput(BaseModel):
    text: str


class PingInput(BaseModel):
    """Every field optional: `{}`, what a partial parser makes of a cut input, validates."""

    note: str = ""


class PickyInput(BaseModel):
    value: int

    @model_validator(mode="after")
    def _explode(self) -> PickyInput:
        if self.value < 0:
            raise RuntimeError("a validator that raises something pydantic does not wrap")
        return self


class Tools:
    """The tools of these tests: each notes what ran and sets `started[text]` when it starts."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.started: dict[str, threading.Event] = {}

    def event(self, key: str) -> threading.Event:
        return self.started.setdefault(key, threading.Event())

    def hold(self, key: str, *, timeout: float = 5.0) -> Hold:
        """A hold the server releases once the call keyed `key` has started."""
        return Hold(self.event(key), timeout)

    def build(self) -> list[Tool[Any]]:
        async def echo(input: EchoInput, context: ToolUseContext) -> str:
            self.event(input.text).set()
            self.ran.append(input.text)
            return f"echo: {input.text}"

        async def ping(input: PingInput, context: ToolUseContext) -> str:
            self.ran.append(f"ping {input.note}".strip())
            return "pong"

        async def picky(input: PickyInput, context: ToolUseContext) -> str:
            self.ran.append(f"picky {input.value}")
            return "ok"

        return [
            build_tool(
                name="Echo",
                input_model=EchoInput,
                call=echo,
                description="Echo.",
                concurrency_safe=True,
            ),
            build_tool(
                name="Ping",
                input_model=PingInput,
                call=ping,
                description="Ping.",
                concurrency_safe=True,
            ),
            build_tool(name="Picky", input_model=PickyInput, call=picky, description="Picky."),
        ]


def session_for(model: Any, tmp_path: Path, tools: Tools, **options: Any) -> Session:
    options.setdefault("permission_mode", "bypassPermissions")  # about streaming only
    return Session(
        tools=tools.build(),
        model=model,
        model_id=MODEL,
        cwd=tmp_path,
        retry_backoff_s=0.01,
        **options,
    )


def loopback(server: MessagesServer) -> AnthropicModel:
    return AnthropicModel(base_url=server.base_url, api_key="test-key")


def results(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of a user message, by tool_use id."""
    return {b["tool_use_id"]: b for b in message["content"] if b["type"] == "tool_result"}


def notices(events: list[LoopEvent], kind: str) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.kind == kind]


# ── a whole call starts at its own content_block_stop ──────────────────────────────────


async def test_a_whole_call_starts_before_the_next_event_is_sent(tmp_path: Path) -> None:
    tools = Tools()
    first, last = tools.hold("first"), tools.hold("last")
    turn = Turn(
        [
            tool_use("Echo", {"text": "first"}),
            text("Now the last one."),
            tool_use("Echo", {"text": "last"}),
        ],
        holds={0: first, 2: last},  # the server sends nothing more until the call started
    )
    with MessagesServer([turn, Turn([text("done")])]) as server:
        result = await session_for(loopback(server), tmp_path, tools).run("echo")

    assert server.errors == [] and result == "done"
    # Each call started while the server was still holding the event after its block: the
    # next block's start (for "first"), the message_delta (for "last").
    assert first.released == [True] and last.released == [True]
    assert tools.ran == ["first", "last"]


async def test_a_call_started_early_still_gets_exactly_one_result(tmp_path: Path) -> None:
    tools = Tools()
    turn = Turn([tool_use("Echo", {"text": "x"})], holds={0: tools.hold("x")})
    events: list[LoopEvent] = []
    with MessagesServer([turn, Turn([text("done")])]) as server:
        session = session_for(loopback(server), tmp_path, tools, on_event=events.append)
        assert await session.run("echo") == "done"

    assert server.errors == []
    assert [e.call.id for e in events if isinstance(e, ToolCallQueued)] == ["toolu_01"]
    assert results(session.messages[2]) == {
        "toolu_01": {"type": "tool_result", "tool_use_id": "toolu_01", "content": "echo: x"}
    }


# ── max_tokens ──────────────────────────────────────────────────────────────────────────


async def test_a_call_cut_mid_input_by_max_tokens_never_runs(tmp_path: Path) -> None:
    # Ping accepts `{}`, which is what the client's partial parser makes of the cut input
    # `{"no`: deciding from a partial parse would run a call the model never finished.
    tools = Tools()
    events: list[LoopEvent] = []
    cut = Turn(
        [text("Pinging"), tool_use("Ping", {"note": "never finished"})],
        stop_reason="max_tokens",
        holds={1: tools.hold("ping", timeout=QUICK)},
    )
    with MessagesServer([cut, Turn([text("ok")])]) as server:
        session = session_for(loopback(server), tmp_path, tools, on_event=events.append)
        result = await session.run("ping")
        assert (result.stop_reason, result.text) == ("max_tokens", "Pinging")
        assert await session.run("again") == "ok"

    assert server.errors == []
    assert tools.ran == []
    call = session.messages[1]["content"][1]
    assert call["name"] == "Ping" and call["input"] != {"note": "never finished"}
    (answer,) = results(session.messages[2]).values()
    assert answer["is_error"] and CUT_BY_MAX_TOKENS in answer["content"]
    assert [n for n in notices(events, "max_tokens") if "cut off" in n]


async def test_a_cut_before_any_input_streamed_never_runs(tmp_path: Path) -> None:
    # `{}` cut half-way streams just `{`: the client's input is `{}`, valid for Ping.
    tools = Tools()
    with MessagesServer([Turn([tool_use("Ping", {})], stop_reason="max_tokens")]) as server:
        session = session_for(loopback(server), tmp_path, tools)
        assert (await session.run("ping")).stop_reason == "max_tokens"

    assert server.errors == [] and tools.ran == []
    (answer,) = results(session.messages[2]).values()
    assert CUT_BY_MAX_TOKENS in answer["content"]


async def test_a_call_whole_when_max_tokens_stopped_runs(tmp_path: Path) -> None:
    # The limit fell exactly at the end of the call: its input parsed strictly and
    # validated at content_block_stop, so it started there and keeps its real result.
    tools = Tools()
    events: list[LoopEvent] = []
    whole = Turn(
        [text("Echoing"), tool_use("Echo", {"text": "whole"})],
        stop_reason="max_tokens",
        cut_input=False,
        holds={1: tools.hold("whole")},
    )
    with MessagesServer([whole, Turn([text("ok")])]) as server:
        session = session_for(loopback(server), tmp_path, tools, on_event=events.append)
        result = await session.run("echo")
        assert (result.stop_reason, result.text) == ("max_tokens", "Echoing")
        assert await session.run("again") == "ok"

    assert server.errors == []
    assert tools.ran == ["whole"] and whole.holds[1].released == [True]
    assert results(session.messages[2]) == {
        "toolu_01": {"type": "tool_result", "tool_use_id": "toolu_01", "content": "echo: whole"}
    }
    said = notices(events, "max_tokens")
    assert said and not [n for n in said if "cut off" in n]


async def test_a_reused_id_does_not_smuggle_a_cut_call_through(tmp_path: Path) -> None:
    # A careless (or hostile) endpoint reuses the id of a call that already started for
    # the cut last call: the cut call is still never run.
    tools = Tools()
    turn = Turn(
        [
            tool_use("Echo", {"text": "first"}, id="toolu_same"),
            tool_use("Ping", {"note": "cut"}, id="toolu_same"),
        ],
        stop_reason="max_tokens",
    )
    with MessagesServer([turn]) as server:
        session = session_for(loopback(server), tmp_path, tools)
        assert (await session.run("go")).stop_reason == "max_tokens"

    assert tools.ran == ["first"]


# ── what is not proven whole waits, as before ───────────────────────────────────────────


async def test_whole_json_that_fails_validation_waits_and_errors_once(tmp_path: Path) -> None:
    tools = Tools()
    hold = Hold(timeout=QUICK)
    events: list[LoopEvent] = []

    def sink(event: LoopEvent) -> None:
        events.append(event)
        if isinstance(event, ToolCallQueued):
            hold.until.set()  # reached the executor: the hold would see it

    turn = Turn([tool_use("Echo", {"txt": "typo"}), text("after")], holds={0: hold})
    with MessagesServer([turn, Turn([text("fixed")])]) as server:
        session = session_for(loopback(server), tmp_path, tools, on_event=sink)
        assert await session.run("echo") == "fixed"

    assert server.errors == [] and tools.ran == []
    assert hold.released == [False]  # not handed over until the next block began
    assert [e.call.id for e in events if isinstance(e, ToolCallQueued)] == ["toolu_01"]
    (answer,) = results(session.messages[2]).values()
    assert answer["is_error"] and "InputValidationError" in answer["content"]
    assert "`text` is missing" in answer["content"]


async def test_an_invalid_last_call_at_max_tokens_is_answered_as_cut(tmp_path: Path) -> None:
    tools = Tools()
    turn = Turn([tool_use("Echo", {"txt": "typo"})], stop_reason="max_tokens", cut_input=False)
    with MessagesServer([turn]) as server:
        session = session_for(loopback(server), tmp_path, tools)
        assert (await session.run("echo")).stop_reason == "max_tokens"

    (answer,) = results(session.messages[2]).values()
    assert answer["is_error"] and CUT_BY_MAX_TOKENS in answer["content"]


async def test_an_unknown_tool_waits_and_gets_one_error(tmp_path: Path) -> None:
    tools = Tools()
    hold = Hold(timeout=QUICK)
    events: list[LoopEvent] = []

    def sink(event: LoopEvent) -> None:
        events.append(event)
        if isinstance(event, ToolCallQueued):
            hold.until.set()

    turn = Turn([tool_use("Nope", {"text": "x"}), tool_use("Echo", {"text": "y"})], holds={0: hold})
    with MessagesServer([turn, Turn([text("ok")])]) as server:
        session = session_for(loopback(server), tmp_path, tools, on_event=sink)
        assert await session.run("go") == "ok"

    assert server.errors == [] and hold.released == [False] and tools.ran == ["y"]
    answers = results(session.messages[2])
    assert answers["toolu_01"]["is_error"] and "Nope" in answers["toolu_01"]["content"]
    assert answers["toolu_02"]["content"] == "echo: y"
    assert len([e for e in events if isinstance(e, ToolCallQueued)]) == 2


async def test_a_validator_that_raises_does_not_break_the_stream(tmp_path: Path) -> None:
    tools = Tools()
    turn = Turn([tool_use("Picky", {"value": -1}), tool_use("Picky", {"value": 2})])
    with MessagesServer([turn, Turn([text("ok")])]) as server:
        session = session_for(loopback(server), tmp_path, tools)
        assert await session.run("go") == "ok"

    assert server.errors == [] and tools.ran == ["picky 2"]
    answers = results(session.messages[2])
    assert answers["toolu_01"]["is_error"] and answers["toolu_02"]["content"] == "ok"


async def test_a_stream_broken_after_an_unproven_call_answers_it_not_run(
    tmp_path: Path,
) -> None:
    tools = Tools()
    turn = Turn([tool_use("Echo", {"text": "ran"}), tool_use("Echo", {"txt": 1})])
    script = [Turn(turn.content, cut_after_blocks=2), Turn([text("Recovered.")])]
    with MessagesServer(script) as server:
        session = session_for(loopback(server), tmp_path, tools)
        assert await session.run("echo") == "Recovered."

    assert server.errors == [] and tools.ran == ["ran"]
    answers = results(session.messages[2])
    assert answers["toolu_01"]["content"] == "echo: ran"
    assert answers["toolu_02"]["is_error"]
    assert NOT_STARTED in answers["toolu_02"]["content"]  # never validated, never run


# ── the loopback server's max_tokens cut ──────────────────────────────────────────────


async def test_the_server_cuts_a_max_tokens_call_mid_input_then_stops_the_block() -> None:
    from anthropic import AsyncAnthropic

    turns = [
        Turn([tool_use("Echo", {"text": "abcdef"})], stop_reason="max_tokens"),
        Turn([tool_use("Echo", {"text": "abcdef"})], stop_reason="max_tokens", cut_input=False),
    ]
    seen: list[tuple[list[str], str | None]] = []
    with MessagesServer(turns) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="test-key", max_retries=0)
        for _ in turns:
            kinds: list[str] = []
            partial = ""
            request: Any = {
                "model": MODEL,
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "x"}],
            }
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    kinds.append(event.type)
                    if event.type == "input_json":
                        partial += event.partial_json
                final = await stream.get_final_message()
            assert final.stop_reason == "max_tokens"
            assert kinds.index("content_block_stop") < kinds.index("message_delta")
            seen.append((kinds, partial))
        await client.close()

    cut, whole = (partial for _, partial in seen)
    assert cut == '{"text":' and json.loads(whole) == {"text": "abcdef"}
    with pytest.raises(ValueError):
        json.loads(cut)


# ── the strict verdict itself ───────────────────────────────────────────────────────────


def tool_block(value: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_01", "name": "Echo", "input": value}


def test_only_strictly_complete_json_equal_to_the_input_is_whole() -> None:
    one = tool_block({"a": 1})
    assert input_is_whole(one, '{"a":1}')
    assert input_is_whole(one, ' {"a": 1}\n')
    assert input_is_whole(tool_block({}), "{}")
    # What a partial parser (the client's jiter) reads as {"a": 1}, and is not whole JSON:
    assert not input_is_whole(one, '{"a":1')
    assert not input_is_whole(one, '{"a":1}x')
    assert not input_is_whole(one, '{"a":1}{"b":2}')
    # Not JSON at all, though Python's json module would take it by default:
    assert not input_is_whole(tool_block({"a": None}), '{"a":NaN}')
    assert not input_is_whole(tool_block({"a": None}), '{"a":-Infinity}')
    # Whole, but not what the block says its input is:
    assert not input_is_whole(one, '{"a":2}')
    assert not input_is_whole(tool_block([1]), "[1]")
    # Nothing streamed: the API's `{}` placeholder proves nothing; a whole input sent in
    # content_block_start (some compatible endpoints do) does.
    assert not input_is_whole(tool_block({}), "")
    assert input_is_whole(one, "")
    assert not input_is_whole({"type": "server_tool_use", "input": {"a": 1}}, '{"a":1}')
    deep = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"  # past what json.loads can nest
    assert not input_is_whole(one, deep)


# ── cassettes replay the recorded verdict ───────────────────────────────────────────────


async def record_and_replay(tmp_path: Path, *go: Turn) -> tuple[Session, Path]:
    """Record "go" (answered by the turns `go`) then "again"; replay both from the file."""
    cassette = tmp_path / "run.json"
    tools = Tools()
    with MessagesServer([*go, Turn([text("ok")])]) as server:
        inner = loopback(server)
        recorded = session_for(CassetteModel(cassette, mode="record", inner=inner), tmp_path, tools)
        await recorded.run("go")
        assert await recorded.run("again") == "ok"
    assert server.errors == []

    replayed = session_for(CassetteModel(cassette, mode="replay"), tmp_path, Tools())
    await replayed.run("go")
    assert await replayed.run("again") == "ok"
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
    return replayed, cassette


async def test_a_cassette_replays_a_call_that_ran_at_a_max_tokens_stop(tmp_path: Path) -> None:
    whole = Turn([tool_use("Echo", {"text": "w"})], stop_reason="max_tokens", cut_input=False)
    replayed, cassette = await record_and_replay(tmp_path, whole)

    assert results(replayed.messages[2])["toolu_01"]["content"] == "echo: w"
    (interaction, _) = json.loads(cassette.read_text())["interactions"]
    assert interaction["response"][LAST_INPUT_COMPLETE] is True

    # Without the recorded verdict the call would be taken as cut: replay would then send
    # another conversation than the recording did.
    data = json.loads(cassette.read_text())
    del data["interactions"][0]["response"][LAST_INPUT_COMPLETE]
    cassette.write_text(json.dumps(data))
    again = session_for(CassetteModel(cassette, mode="replay"), tmp_path, Tools())
    await again.run("go")
    try:
        await again.run("again")
    except CassetteMismatch:
        pass
    else:
        raise AssertionError("a replay without the verdict should have cut the call")


async def test_a_cassette_replays_a_cut_call_as_cut(tmp_path: Path) -> None:
    cut = Turn([tool_use("Echo", {"text": "c"})], stop_reason="max_tokens")
    replayed, cassette = await record_and_replay(tmp_path, cut)

    assert CUT_BY_MAX_TOKENS in results(replayed.messages[2])["toolu_01"]["content"]
    assert LAST_INPUT_COMPLETE not in cassette.read_text()


async def test_a_cassette_replays_a_call_that_ran_before_a_break(tmp_path: Path) -> None:
    broken = Turn([tool_use("Echo", {"text": "b"})], cut_after_blocks=1)
    replayed, cassette = await record_and_replay(tmp_path, broken, Turn([text("recovered")]))

    assert results(replayed.messages[2])["toolu_01"]["content"] == "echo: b"
    assert json.loads(cassette.read_text())["interactions"][0]["response"][LAST_INPUT_COMPLETE]


async def test_ordinary_recordings_carry_no_verdict(tmp_path: Path) -> None:
    plain = Turn([tool_use("Echo", {"text": "p"}), tool_use("Echo", {"text": "q"})])
    _, cassette = await record_and_replay(tmp_path, plain, Turn([text("done")]))
    assert LAST_INPUT_COMPLETE not in cassette.read_text()


async def test_a_call_cut_by_the_context_window_never_runs(tmp_path: Path) -> None:
    # `model_context_window_exceeded` ends the output wherever the tokens ran out, too.
    tools = Tools()
    turn = Turn([tool_use("Ping", {"note": "cut"})], stop_reason="model_context_window_exceeded")
    with MessagesServer([turn, Turn([text("ok")])]) as server:
        session = session_for(loopback(server), tmp_path, tools)
        await session.run("ping")

    assert server.errors == [] and tools.ran == []
    (answer,) = results(session.messages[2]).values()
    assert answer["is_error"] and CUT_BY_MAX_TOKENS in answer["content"]
