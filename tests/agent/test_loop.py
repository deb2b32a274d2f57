"""The agent loop end to end: the real `anthropic` client against the loopback server.

Every test asserts `server.errors == []`: the server rejects invalid conversations the way
the real Messages API does, so a passing test proves the loop kept the conversation valid.
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
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    TurnEnd,
    UsageReported,
)
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PermissionAsk
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelAPIError
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.testing.prompt_cache import without_cache_marks

MODEL = "claude-sonnet-4-5"


class EchoInput(BaseModel):
    text: str


class WaitInput(BaseModel):
    seconds: float


class Recorder:
    """Collects events and tool runs for assertions."""

    def __init__(self) -> None:
        self.events: list[LoopEvent] = []
        self.ran: list[tuple[str, float]] = []

    def __call__(self, event: LoopEvent) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def echo_tool(recorder: Recorder) -> Tool[EchoInput]:
    def echo(input: EchoInput, context: ToolUseContext) -> str:
        recorder.ran.append((input.text, time.perf_counter()))
        return f"echo: {input.text}"

    return build_tool(
        name="Echo",
        input_model=EchoInput,
        call=echo,
        description="Echo the text back.",
        prompt="Use Echo to echo text.",
        read_only=True,
        concurrency_safe=True,
    )


def wait_tool(recorder: Recorder, *, behavior: str = "cancel") -> Tool[WaitInput]:
    async def wait(input: WaitInput, context: ToolUseContext) -> str:
        recorder.ran.append((f"wait {input.seconds}", time.perf_counter()))
        await asyncio.sleep(input.seconds)
        return f"waited {input.seconds}"

    return build_tool(
        name="Wait",
        input_model=WaitInput,
        call=wait,
        description="Wait a while.",
        read_only=True,
        concurrency_safe=True,
        interrupt_behavior=behavior,  # type: ignore[arg-type]
    )


def session_for(
    server: MessagesServer, tmp_path: Path, tools: list[Tool[Any]], **options: Any
) -> Session:
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    # These tests are about the loop, not permissions: every call may run.
    options.setdefault("permission_mode", "bypassPermissions")
    return Session(
        tools=tools, model=model, model_id=MODEL, cwd=tmp_path, retry_backoff_s=0.01, **options
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def results_in(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b["type"] == "tool_result"]


async def test_multi_turn_tool_loop(tmp_path: Path) -> None:
    recorder = Recorder()
    script = [
        Turn([text("Let me echo."), tool_use("Echo", {"text": "one"})]),
        Turn([tool_use("Echo", {"text": "two"})]),
        Turn([text("Both echoed.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, [echo_tool(recorder)], on_event=recorder)
        result = await session.run("Echo one, then two.")

    assert server.errors == []
    assert (result, result.text, result.stop_reason, result.turns) == (
        "Both echoed.",
        "Both echoed.",
        "end_turn",
        3,
    )
    assert [m["role"] for m in session.messages] == ["user", "assistant"] * 3
    assert [r[0] for r in recorder.ran] == ["one", "two"]
    third = bodies(server)[2]
    assert results_in(third["messages"][-1]) == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_02",
            "content": "echo: two",
            "cache_control": {"type": "ephemeral"},  # the conversation's breakpoint moves on
        }
    ]
    assert not any("cache_control" in b for m in third["messages"][:-1] for b in m["content"])
    # Caching breakpoints on the last system block and the last tool; the tool prompt is in.
    assert third["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "Use Echo to echo text." in third["system"][-1]["text"]
    assert str(tmp_path) in third["system"][0]["text"]
    assert third["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert session.messages[-1]["content"] == [{"type": "text", "text": "Both echoed."}]
    # Events: streamed text, one TurnEnd per response, usage with a cost estimate.
    assert "".join(e.text for e in recorder.of(TextDelta)) == "Let me echo.Both echoed."
    assert [e.stop_reason for e in recorder.of(TurnEnd)] == ["tool_use", "tool_use", "end_turn"]
    usage = recorder.of(UsageReported)[-1]
    assert usage.run_usage.input_tokens > 0 and usage.run_cost_usd is not None
    assert session.usage == result.usage and session.cost_usd == pytest.approx(result.cost_usd)
    # The transcript holds the same conversation.
    lines = [json.loads(x) for x in session.transcript_path.read_text().splitlines()]
    assert sum(1 for line in lines if line["type"] == "message") == 6


async def test_parallel_tool_use_in_one_message_runs_together(tmp_path: Path) -> None:
    recorder = Recorder()
    calls = [tool_use("Wait", {"seconds": 0.4}) for _ in range(3)]
    with MessagesServer([Turn(calls, block_delay=0.05), Turn([text("done")])]) as server:
        session = session_for(server, tmp_path, [wait_tool(recorder)], on_event=recorder)
        result = await session.run("wait three times")

    assert server.errors == []
    assert result == "done"
    starts = [at for _, at in recorder.ran]
    assert len(starts) == 3
    # Sequential, each would start 0.4 s after the one before; together they start as each
    # block streams (how long the whole run took depends on the machine: not asserted).
    assert max(starts) - min(starts) < 0.4
    answers = results_in(bodies(server)[1]["messages"][-1])
    assert [a["tool_use_id"] for a in answers] == ["toolu_01", "toolu_02", "toolu_03"]
    assert all(a["content"] == "waited 0.4" for a in answers)


async def test_unknown_tool_and_invalid_input_become_error_results(tmp_path: Path) -> None:
    recorder = Recorder()
    script = [
        Turn([tool_use("Nope", {"x": 1}), tool_use("Echo", {"wrong": "field"})]),
        Turn([text("I see.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, [echo_tool(recorder)])
        result = await session.run("try things")

    assert server.errors == []
    assert result == "I see."
    unknown, invalid = results_in(bodies(server)[1]["messages"][-1])
    assert unknown["is_error"] and "No such tool available: Nope" in unknown["content"]
    assert invalid["is_error"] and "InputValidationError" in invalid["content"]
    assert "`text` is missing" in invalid["content"]
    assert recorder.ran == []


async def test_denied_call_reaches_the_model_and_is_reported(tmp_path: Path) -> None:
    recorder = Recorder()
    asked: list[ApprovalRequest] = []

    class Denier:
        async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision("deny", feedback="not today")

    def ask_first(input: EchoInput, context: ToolUseContext) -> PermissionAsk:
        return PermissionAsk("Echo changes things")

    tool = echo_tool(recorder)
    tool.check_permissions = ask_first
    script = [Turn([tool_use("Echo", {"text": "x"})]), Turn([text("Understood.")])]
    with MessagesServer(script) as server:
        session = session_for(
            server,
            tmp_path,
            [tool],
            approver=Denier(),
            on_event=recorder,
            permission_mode="default",
        )
        result = await session.run("echo x")

    assert server.errors == []
    assert result == "Understood."
    assert recorder.ran == []
    assert [a.tool_name for a in asked] == ["Echo"]
    assert [e.request.tool_use_id for e in recorder.of(PermissionRequested)] == ["toolu_01"]
    (denied,) = results_in(bodies(server)[1]["messages"][-1])
    assert denied["is_error"] and "denied" in denied["content"] and "not today" in denied["content"]
    assert recorder.of(ToolCallFinished)[0].status == "denied"


async def test_overloaded_and_rate_limited_answers_are_retried(tmp_path: Path) -> None:
    script = [Turn(status=429), Turn(status=529), Turn([text("made it")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, [])
        result = await session.run("hello")

    assert server.errors == []
    assert result == "made it"
    assert len(bodies(server)) == 3


async def test_api_error_leaves_a_conversation_the_next_run_can_continue(tmp_path: Path) -> None:
    script = [Turn(status=400, error_message="bad thing"), Turn([text("fine now")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, [])
        with pytest.raises(ModelAPIError, match="bad thing"):
            await session.run("first")
        assert [m["role"] for m in session.messages] == ["user"]
        result = await session.run("second")

    assert server.errors == []
    assert result == "fine now"
    assert without_cache_marks(bodies(server)[1]["messages"]) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        }
    ]


def test_session_defaults_come_from_options_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_toolhost.model.anthropic_model import DEFAULT_MODEL
    from jupyter_toolhost.tools import builtin_tools

    monkeypatch.delenv("JUPYTER_TOOLHOST_MODEL", raising=False)
    assert Session(cwd=tmp_path).model_id == DEFAULT_MODEL
    monkeypatch.setenv("JUPYTER_TOOLHOST_MODEL", "claude-haiku-4-5")
    session = Session(cwd=tmp_path)
    assert session.model_id == "claude-haiku-4-5"
    assert Session(model="claude-opus-4-5", cwd=tmp_path, tools=[]).model_id == "claude-opus-4-5"
    assert [t.name for t in session.tools] == [t.name for t in builtin_tools()]
    assert session.transcript_path == tmp_path / ".toolhost/sessions" / session.session_id / (
        "transcript.jsonl"
    )
    with pytest.raises(ValueError, match="unique"):
        Session(tools=[echo_tool(Recorder()), echo_tool(Recorder())], cwd=tmp_path)


def test_cost_estimates_follow_the_price_table() -> None:
    from jupyter_toolhost.model.base import Usage
    from jupyter_toolhost.model.pricing import estimate_cost

    usage = Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000)
    assert estimate_cost("claude-sonnet-4-5-20250929", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)
    assert estimate_cost("claude-opus-4-1", Usage(output_tokens=1000)) == pytest.approx(0.075)
    assert estimate_cost("some-other-model", usage) is None
