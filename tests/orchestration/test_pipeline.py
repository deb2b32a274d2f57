"""The per-call pipeline, driven for real: every branch yields exactly one tool_result."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import ScriptedApprover

from jupyter_toolhost import ToolOutput, build_tool
from jupyter_toolhost.core.context import AbortSignal, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.error_results import error_content
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
    ToolCall,
    ToolError,
)
from jupyter_toolhost.hooks.hooks import HookInput, HookOutput, Hooks
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.api import (
    ApprovalDecision,
    BasicCanUseTool,
    PermissionRequest,
)


class EchoInput(BaseModel):
    text: str
    times: int = 1


def echo(input: EchoInput, context: ToolUseContext) -> str:
    return input.text * input.times


def make_context(tmp_path: Path, *tools: Tool[Any]) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=tools), cwd=tmp_path)


def make_pipeline(context: ToolUseContext, **kwargs: Any) -> Pipeline:
    return Pipeline(results=ResultStore(context.session_dir() / "tool-results"), **kwargs)


def echo_tool(**kwargs: Any) -> Tool[EchoInput]:
    options: dict[str, Any] = {"name": "Echo", "description": "Echo text."} | kwargs
    return build_tool(input_model=EchoInput, call=echo, **options)


async def test_sync_tool_runs_in_a_worker_thread(tmp_path: Path) -> None:
    threads: list[str] = []

    def where(input: EchoInput, context: ToolUseContext) -> str:
        threads.append(threading.current_thread().name)
        return input.text

    tool = build_tool(name="Where", input_model=EchoInput, call=where, description="d")
    context = make_context(tmp_path, tool)
    result = await make_pipeline(context).run(ToolCall("t1", "Where", {"text": "hi"}), context)
    assert (result.content, result.is_error, result.tool_use_id) == ("hi", False, "t1")
    assert threads and threads[0] != threading.main_thread().name


async def test_async_tool_and_context_modifier_are_returned(tmp_path: Path) -> None:
    async def remember(input: EchoInput, context: ToolUseContext) -> ToolOutput:
        return ToolOutput(data={"seen": input.text}, context_modifier=lambda c: None)

    tool = build_tool(name="Remember", input_model=EchoInput, call=remember, description="d")
    context = make_context(tmp_path, tool)
    result = await make_pipeline(context).run(ToolCall("t", "Remember", {"text": "x"}), context)
    assert result.content == '{\n  "seen": "x"\n}'
    assert result.output == {"seen": "x"}
    assert callable(result.context_modifier)


async def test_unknown_tool_lists_the_available_names(tmp_path: Path) -> None:
    disabled = build_tool(
        name="Hidden", input_model=EchoInput, call=echo, description="d", is_enabled=lambda: False
    )
    context = make_context(tmp_path, echo_tool(), disabled)
    result = await make_pipeline(context).run(ToolCall("t", "Nope", {}), context)
    assert result.is_error
    assert result.content == error_content("No such tool available: Nope. Available tools: Echo")


async def test_disabled_tool_is_unknown(tmp_path: Path) -> None:
    disabled = build_tool(
        name="Hidden", input_model=EchoInput, call=echo, description="d", is_enabled=lambda: False
    )
    context = make_context(tmp_path, disabled)
    result = await make_pipeline(context).run(ToolCall("t", "Hidden", {"text": "a"}), context)
    assert result.is_error and "No such tool available: Hidden" in str(result.content)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, "The required parameter `text` is missing"),
        ({"text": "a", "times": "many"}, "`times`: Input should be a valid integer"),
        ({"text": "a", "colour": "red"}, None),
        (["not", "an", "object"], "expects a JSON object as input, got list"),
        ("text", "expects a JSON object as input, got str"),
    ],
)
async def test_invalid_input_is_a_concise_error(
    tmp_path: Path, raw: Any, expected: str | None
) -> None:
    class Strict(BaseModel, extra="forbid"):
        text: str
        times: int = 1

    tool = build_tool(name="Strict", input_model=Strict, call=echo, description="d")
    context = make_context(tmp_path, tool)
    result = await make_pipeline(context).run(ToolCall("t", "Strict", raw), context)
    assert result.is_error
    text = str(result.content)
    assert text.startswith("<tool_use_error>InputValidationError: Strict")
    assert expected is None or expected in text
    if expected is None:
        assert "An unexpected parameter `colour` was provided" in text
    assert "Traceback" not in text and "errors.pydantic.dev" not in text


async def test_raising_tool_reports_type_and_message(tmp_path: Path) -> None:
    def boom(input: EchoInput, context: ToolUseContext) -> str:
        raise KeyError("missing-key")

    def refuse(input: EchoInput, context: ToolUseContext) -> str:
        raise ToolError("File does not exist: a.txt")

    tools = [
        build_tool(name="Boom", input_model=EchoInput, call=boom, description="d"),
        build_tool(name="Refuse", input_model=EchoInput, call=refuse, description="d"),
    ]
    context = make_context(tmp_path, *tools)
    pipeline = make_pipeline(context)
    boom_result = await pipeline.run(ToolCall("a", "Boom", {"text": "x"}), context)
    refuse_result = await pipeline.run(ToolCall("b", "Refuse", {"text": "x"}), context)
    assert boom_result.content == error_content("KeyError: 'missing-key'")
    assert refuse_result.content == error_content("File does not exist: a.txt")
    assert boom_result.is_error and refuse_result.is_error


async def test_empty_output_is_named(tmp_path: Path) -> None:
    tool = build_tool(name="Quiet", input_model=EchoInput, call=lambda i, c: None, description="d")
    context = make_context(tmp_path, tool)
    result = await make_pipeline(context).run(ToolCall("t", "Quiet", {"text": ""}), context)
    assert result.content == "(Quiet completed with no output)"
    assert not result.is_error


async def test_abort_cancels_a_running_call(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(input: EchoInput, context: ToolUseContext) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    tool = build_tool(name="Slow", input_model=EchoInput, call=slow, description="d")
    signal = AbortSignal()
    context = make_context(tmp_path, tool)
    context.abort = signal
    task = asyncio.create_task(
        make_pipeline(context).run(ToolCall("t", "Slow", {"text": ""}), context)
    )
    await started.wait()
    signal.abort("interrupted by user")
    result = await asyncio.wait_for(task, 2)
    assert result.is_error
    assert result.content == error_content("Cancelled: interrupted by user")


async def test_already_aborted_call_never_starts(tmp_path: Path) -> None:
    calls: list[str] = []
    tool = build_tool(
        name="Count", input_model=EchoInput, call=lambda i, c: calls.append(i.text), description="d"
    )
    context = make_context(tmp_path, tool)
    context.abort.abort("sibling failed")
    result = await make_pipeline(context).run(ToolCall("t", "Count", {"text": "x"}), context)
    assert result.is_error and "sibling failed" in str(result.content)
    assert calls == []


# ── hooks ────────────────────────────────────────────────────────────────────────────────


async def test_pre_hook_rewrites_input_and_post_hook_rewrites_output(tmp_path: Path) -> None:
    seen: list[HookInput] = []

    def shout(hook_input: HookInput) -> HookOutput:
        seen.append(hook_input)
        text = str((hook_input.tool_input or {})["text"])
        return HookOutput(updated_input={"text": text.upper()}, additional_context=("ctx",))

    def wrap(hook_input: HookInput) -> HookOutput:
        seen.append(hook_input)
        return HookOutput(updated_output=f"[{hook_input.tool_response}]")

    hooks = Hooks()
    hooks.add("PreToolUse", shout, matcher="Ec.*")
    hooks.add("PostToolUse", wrap, matcher="Echo")
    hooks.add("PreToolUse", lambda h: HookOutput(updated_input={"text": "no"}), matcher="Other")
    context = make_context(tmp_path, echo_tool())
    result = await make_pipeline(context, hooks=hooks).run(
        ToolCall("t", "Echo", {"text": "hi"}), context
    )
    assert result.content == "[HI]"
    assert result.additional_context == ("ctx",)
    assert [h.hook_event_name for h in seen] == ["PreToolUse", "PostToolUse"]
    assert seen[0].tool_input == {"text": "hi"}
    assert seen[1].tool_input == {"text": "HI"}
    assert seen[0].to_json()["tool_use_id"] == "t"


async def test_hook_input_sees_backfilled_fields_but_call_does_not(tmp_path: Path) -> None:
    seen: list[Any] = []
    received: list[EchoInput] = []

    def call(input: EchoInput, context: ToolUseContext) -> str:
        received.append(input)
        return "ok"

    tool = build_tool(
        name="Echo",
        input_model=EchoInput,
        call=call,
        description="d",
        backfill_observable_input=lambda data: {**data, "absolute": "/x/" + data["text"]},
    )
    hooks = Hooks()
    hooks.add("PreToolUse", lambda h: seen.append(h.tool_input))
    context = make_context(tmp_path, tool)
    await make_pipeline(context, hooks=hooks).run(ToolCall("t", "Echo", {"text": "a"}), context)
    assert seen == [{"text": "a", "absolute": "/x/a"}]
    assert received == [EchoInput(text="a")]


async def test_hook_rewriting_input_badly_is_an_error(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.add("PreToolUse", lambda h: HookOutput(updated_input={"times": 2}))
    context = make_context(tmp_path, echo_tool())
    result = await make_pipeline(context, hooks=hooks).run(
        ToolCall("t", "Echo", {"text": "a"}), context
    )
    assert result.is_error and "A PreToolUse hook rewrote the input badly" in str(result.content)


async def test_failing_hook_is_not_fatal_and_failure_hook_sees_the_error(tmp_path: Path) -> None:
    failures: list[str | None] = []

    def broken(hook_input: HookInput) -> HookOutput:
        raise RuntimeError("hook bug")

    def explode(input: EchoInput, context: ToolUseContext) -> str:
        raise ValueError("bad value")

    hooks = Hooks()
    hooks.add("PreToolUse", broken)
    hooks.add("PostToolUseFailure", lambda h: failures.append(h.error))
    tool = build_tool(name="Explode", input_model=EchoInput, call=explode, description="d")
    context = make_context(tmp_path, echo_tool(), tool)
    pipeline = make_pipeline(context, hooks=hooks)
    ok = await pipeline.run(ToolCall("a", "Echo", {"text": "a"}), context)
    failed = await pipeline.run(ToolCall("b", "Explode", {"text": "a"}), context)
    assert (ok.content, ok.is_error) == ("a", False)
    assert failed.is_error and failures == ["ValueError: bad value"]


# ── permissions ──────────────────────────────────────────────────────────────────────────


def asking_tool(**kwargs: Any) -> Tool[EchoInput]:
    async def ask(input: EchoInput, context: ToolUseContext) -> PermissionResult:
        return PermissionAsk(f"Echo {input.text}?", DecisionReason("tool", "asks always"))

    return echo_tool(check_permissions=ask, **kwargs)


@pytest.mark.parametrize(
    ("decision", "content", "is_error"),
    [
        (ApprovalDecision("allow"), "hi", False),
        (ApprovalDecision("always"), "hi", False),
        (ApprovalDecision("deny"), error_content("The user denied this Echo call."), True),
        (
            ApprovalDecision("deny", feedback="use Read instead"),
            error_content("The user denied this Echo call. They said: use Read instead"),
            True,
        ),
    ],
)
async def test_ask_goes_to_the_approver(
    tmp_path: Path, decision: ApprovalDecision, content: str, is_error: bool
) -> None:
    approver = ScriptedApprover(decision)
    context = make_context(tmp_path, asking_tool())
    pipeline = make_pipeline(context, can_use_tool=BasicCanUseTool(approver))
    result = await pipeline.run(ToolCall("t1", "Echo", {"text": "hi"}), context)
    assert (result.content, result.is_error) == (content, is_error)
    [asked] = approver.asked
    assert (asked.tool_name, asked.summary, asked.message, asked.tool_use_id) == (
        "Echo",
        "hi",
        "Echo hi?",
        "t1",
    )


async def test_ask_without_an_approver_is_denied_with_advice(tmp_path: Path) -> None:
    context = make_context(tmp_path, asking_tool())
    result = await make_pipeline(context).run(ToolCall("t", "Echo", {"text": "hi"}), context)
    assert result.is_error
    assert "no one is available to approve it" in str(result.content)
    assert isinstance(result.decision, PermissionDeny)


async def test_tool_check_deny_and_rewrite(tmp_path: Path) -> None:
    def deny(input: EchoInput, context: ToolUseContext) -> PermissionResult:
        return PermissionDeny("Echoing secrets is not allowed")

    def rewrite(input: EchoInput, context: ToolUseContext) -> PermissionResult:
        return PermissionAllow(updated_input={"text": "safe"})

    context = make_context(tmp_path)
    pipeline = make_pipeline(context)
    for check, expected, is_error in [
        (deny, error_content("Echoing secrets is not allowed"), True),
        (rewrite, "safe", False),
    ]:
        context.options = ToolUseOptions(tools=[echo_tool(check_permissions=check)])
        result = await pipeline.run(ToolCall("t", "Echo", {"text": "secret"}), context)
        assert (result.content, result.is_error) == (expected, is_error)


async def test_raising_permission_check_denies(tmp_path: Path) -> None:
    def broken(input: EchoInput, context: ToolUseContext) -> PermissionResult:
        raise OSError("settings unreadable")

    context = make_context(tmp_path, echo_tool(check_permissions=broken))
    result = await make_pipeline(context).run(ToolCall("t", "Echo", {"text": "a"}), context)
    assert result.is_error
    assert "permission check failed: OSError: settings unreadable" in str(result.content)


async def test_custom_can_use_tool_sees_the_request(tmp_path: Path) -> None:
    requests: list[PermissionRequest] = []

    async def deny_all(request: PermissionRequest) -> PermissionResult:
        requests.append(request)
        return PermissionDeny("not today", DecisionReason("mode", "dontAsk"))

    context = make_context(tmp_path, echo_tool())
    result = await make_pipeline(context, can_use_tool=deny_all).run(
        ToolCall("t", "Echo", {"text": "a"}), context
    )
    assert result.content == error_content("not today")
    assert isinstance(result.decision, PermissionDeny)
    assert str(result.decision.reason) == "dontAsk"
    assert requests[0].input == EchoInput(text="a")


@pytest.mark.parametrize(
    ("hook_decision", "approver_calls", "is_error"),
    [("deny", 0, True), ("allow", 0, False), ("ask", 1, False)],
)
async def test_hook_permission_decisions(
    tmp_path: Path, hook_decision: Any, approver_calls: int, is_error: bool
) -> None:
    hooks = Hooks()
    hooks.add("PreToolUse", lambda h: HookOutput(permission_decision=hook_decision))
    approver = ScriptedApprover(ApprovalDecision("allow"))
    tool = asking_tool() if hook_decision == "allow" else echo_tool()
    context = make_context(tmp_path, tool)
    pipeline = make_pipeline(context, hooks=hooks, can_use_tool=BasicCanUseTool(approver))
    result = await pipeline.run(ToolCall("t", "Echo", {"text": "a"}), context)
    assert result.is_error is is_error
    assert len(approver.asked) == approver_calls


async def test_hook_decisions_combine_deny_over_allow(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.add("PreToolUse", lambda h: HookOutput(permission_decision="allow"))
    hooks.add(
        "PreToolUse",
        lambda h: HookOutput(permission_decision="deny", reason=DecisionReason("hook", "no echo")),
    )
    hooks.add("PreToolUse", lambda h: HookOutput(permission_decision="ask"))
    context = make_context(tmp_path, echo_tool())
    result = await make_pipeline(context, hooks=hooks).run(
        ToolCall("t", "Echo", {"text": "a"}), context
    )
    assert result.content == error_content("Blocked by hook: no echo")
