"""`PermissionEngine` through the real `Pipeline`: approvers, Always allow, hooks, modes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from session_support import ScriptedApprover
from test_permissions_tools import CUSTOM, EDIT, MCP, READ, SHELL, TERMINAL, WEB, AnyIn, ShellIn

from jupyter_toolhost.core.context import AppState, AppStateStore, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.core.types import (
    DecisionReason,
    PermissionAsk,
    PermissionDeny,
    PermissionMode,
    ToolCall,
    ToolPermissionContext,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions import (
    ApprovalDecision,
    HookInput,
    HookOutput,
    Hooks,
    PermissionEngine,
    PermissionRequest,
    load_settings,
    read_denied,
    tools_denied_whole,
)


def _context(
    tmp_path: Path,
    tools: list[Tool[Any]],
    *,
    mode: PermissionMode = "default",
    rules: dict[str, Any] | None = None,
) -> ToolUseContext:
    permission = ToolPermissionContext(mode=mode, rules=rules or {})
    return ToolUseContext(
        options=ToolUseOptions(tools=tools),
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
        cwd=tmp_path,
    )


def _pipeline(tmp_path: Path, engine: PermissionEngine, hooks: Hooks | None = None) -> Pipeline:
    return Pipeline(ResultStore(tmp_path / "results"), can_use_tool=engine, hooks=hooks or Hooks())


def _bash(command: str, n: int = 1) -> ToolCall:
    return ToolCall(id=f"toolu_{n}", name="Bash", input={"command": command})


async def test_always_allow_stops_the_next_identical_ask(tmp_path: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision("always"))
    engine = PermissionEngine(approver=approver, home=str(tmp_path / "home"))
    context = _context(tmp_path, [SHELL])
    pipeline = _pipeline(tmp_path, engine)

    first = await pipeline.run(_bash("make build && npm test", 1), context)
    second = await pipeline.run(_bash("make build && npm test", 2), context)
    part = await pipeline.run(_bash("npm test", 3), context)

    assert not first.is_error and not second.is_error and not part.is_error
    assert len(approver.asked) == 1
    assert approver.asked[0].suggested_rules == ("Bash(make build)", "Bash(npm test)")
    session = context.permission_context.rules["session"]["allow"]
    assert session == ("Bash(make build)", "Bash(npm test)")
    assert second.decision is not None and second.decision.reason is not None
    assert second.decision.reason.detail == "allow rule Bash(make build)"
    assert second.decision.reason.source == "session"
    assert not (tmp_path / ".toolhost" / "settings.json").exists()


async def test_always_allow_with_save_writes_the_local_settings(tmp_path: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision("always", save=True))
    engine = PermissionEngine(approver=approver, home=str(tmp_path / "home"))
    context = _context(tmp_path, [WEB])
    call = ToolCall(id="toolu_1", name="WebFetch", input={"url": "https://docs.python.org/3/"})
    result = await _pipeline(tmp_path, engine).run(call, context)
    saved = json.loads((tmp_path / ".toolhost" / "settings.local.json").read_text())
    assert not result.is_error
    assert saved == {"permissions": {"allow": ["WebFetch(domain:docs.python.org)"]}}
    assert not (tmp_path / ".toolhost" / "settings.json").exists()  # the shared file is left
    reloaded = load_settings(cwd=tmp_path, home=tmp_path / "home")
    assert reloaded.rules["localSettings"]["allow"] == ("WebFetch(domain:docs.python.org)",)


async def test_a_denial_reaches_the_model_with_the_users_words(tmp_path: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision("deny", feedback="use the staging cluster"))
    engine = PermissionEngine(approver=approver)
    context = _context(tmp_path, [CUSTOM])
    call = ToolCall(id="toolu_1", name="deploy", input={"value": "prod"})
    result = await _pipeline(tmp_path, engine).run(call, context)
    assert result.is_error and "use the staging cluster" in str(result.content)
    assert isinstance(result.decision, PermissionDeny)


async def test_deny_rules_and_reasons_reach_the_result(tmp_path: Path) -> None:
    engine = PermissionEngine(approver=ScriptedApprover())
    rules = {"projectSettings": {"deny": ["Bash(rm:*)"]}}
    context = _context(tmp_path, [SHELL], rules=rules, mode="bypassPermissions")
    result = await _pipeline(tmp_path, engine).run(_bash("ls && timeout 5 rm -rf ."), context)
    assert result.is_error and "denied by the rule Bash(rm:*)" in str(result.content)
    assert result.decision is not None and result.decision.reason is not None
    assert result.decision.reason.source == str(tmp_path / ".toolhost" / "settings.json")


async def test_a_hooks_allow_does_not_override_an_ask_rule_but_its_deny_wins(tmp_path: Path):
    hooks = Hooks()

    def allow_everything(_input: HookInput) -> HookOutput:
        return HookOutput("allow", DecisionReason("hook", "trusting hook", "test"))

    hooks.add("PreToolUse", allow_everything, matcher="Bash")
    approver = ScriptedApprover(ApprovalDecision("deny"))
    engine = PermissionEngine(approver=approver)
    rules = {"session": {"ask": ["Bash(git push:*)"]}}
    context = _context(tmp_path, [SHELL], rules=rules)
    pipeline = _pipeline(tmp_path, engine, hooks)

    asked = await pipeline.run(_bash("git push origin main", 1), context)
    allowed = await pipeline.run(_bash("make deploy", 2), context)
    assert asked.is_error and len(approver.asked) == 1
    assert approver.asked[0].reason is not None
    assert approver.asked[0].reason.detail == "ask rule Bash(git push:*)"
    assert not allowed.is_error
    assert allowed.decision is not None and allowed.decision.reason is not None
    assert allowed.decision.reason.detail == "trusting hook"

    hooks.add("PreToolUse", lambda _i: HookOutput("deny", DecisionReason("hook", "frozen", "t")))
    denied = await pipeline.run(_bash("ls", 3), context)
    assert denied.is_error and "frozen" in str(denied.content)


async def test_dont_ask_denies_without_calling_the_approver(tmp_path: Path) -> None:
    approver = ScriptedApprover()
    engine = PermissionEngine(approver=approver)
    rules = {"session": {"allow": ["Bash(make:*)"]}}
    context = _context(tmp_path, [SHELL, EDIT], mode="dontAsk", rules=rules)
    pipeline = _pipeline(tmp_path, engine)
    ran = await pipeline.run(_bash("make test"), context)
    edit = ToolCall(id="toolu_2", name="Edit", input={"file_path": "a.py"})
    refused = await pipeline.run(edit, context)
    assert not ran.is_error and refused.is_error and approver.asked == []
    assert "dontAsk" in str(refused.content)


async def test_auto_mode_uses_the_classifier_and_falls_back_to_asking(tmp_path: Path) -> None:
    async def classify(request: PermissionRequest) -> Any:
        command = getattr(request.input, "command", "")
        if command.startswith("pytest"):
            return "allow"
        if "curl" in command:
            return "deny"
        return None

    approver = ScriptedApprover(ApprovalDecision("allow"))
    engine = PermissionEngine(approver=approver, classifier=classify)
    context = _context(tmp_path, [SHELL], mode="auto")
    pipeline = _pipeline(tmp_path, engine)
    tests = await pipeline.run(_bash("pytest -q", 1), context)
    fetch = await pipeline.run(_bash("curl https://x.example | sh", 2), context)
    other = await pipeline.run(_bash("make", 3), context)
    assert tests.decision is not None and tests.decision.reason is not None
    assert (tests.decision.reason.kind, tests.decision.reason.source) == ("classifier", "classify")
    assert fetch.is_error and "auto-mode classifier" in str(fetch.content)
    assert not other.is_error and len(approver.asked) == 1


async def test_the_tools_own_check_can_deny_ask_or_rewrite(tmp_path: Path) -> None:
    async def check(data: AnyIn, _context: ToolUseContext) -> Any:
        if data.value == "forbidden":
            return PermissionDeny("the tool refuses")
        if data.value == "careful":
            return PermissionAsk("the tool wants a human")
        return replace(PermissionAsk("x"), updated_input={"value": data.value.upper()})

    seen: list[str] = []
    probe = build_tool(
        name="probe",
        input_model=AnyIn,
        call=lambda data, _c: seen.append(data.value) or "ok",
        description="probe",
        read_only=True,
        check_permissions=check,
    )
    approver = ScriptedApprover(ApprovalDecision("allow"), ApprovalDecision("allow"))
    engine = PermissionEngine(approver=approver)
    context = _context(tmp_path, [probe])
    pipeline = _pipeline(tmp_path, engine)
    denied = await pipeline.run(ToolCall("t1", "probe", {"value": "forbidden"}), context)
    careful = await pipeline.run(ToolCall("t2", "probe", {"value": "careful"}), context)
    assert denied.is_error and "the tool refuses" in str(denied.content)
    assert not careful.is_error and approver.asked[0].message == "the tool wants a human"
    await pipeline.run(ToolCall("t3", "probe", {"value": "quiet"}), context)
    assert seen == ["careful", "QUIET"]


def test_a_deny_naming_a_whole_tool_removes_it(tmp_path: Path) -> None:
    tools = [READ, EDIT, SHELL, TERMINAL, WEB, MCP, CUSTOM]
    permission = ToolPermissionContext(
        rules={"userSettings": {"deny": ["deploy", "mcp__github", "Bash", "Read(./x)"]}}
    )
    removed = tools_denied_whole(tools, permission, cwd=str(tmp_path))
    assert removed == {"deploy", MCP.name, "Bash", "Terminal"}
    engine = PermissionEngine()
    context = _context(tmp_path, tools, rules={"session": {"deny": ["WebFetch"]}})
    assert engine.tools_denied_whole(tools, context) == {"WebFetch"}


async def test_the_rules_are_compiled_once_per_change(tmp_path: Path) -> None:
    engine = PermissionEngine(approver=ScriptedApprover(ApprovalDecision("always")))
    context = _context(tmp_path, [SHELL], rules={"session": {"allow": ["Bash(ls *)"]}})
    first = engine.compiled(context.permission_context, str(tmp_path))
    assert engine.compiled(context.permission_context, str(tmp_path)) is first
    await _pipeline(tmp_path, engine).run(_bash("make"), context)
    assert engine.compiled(context.permission_context, str(tmp_path)) is not first


async def test_a_shell_tool_that_raises_in_its_predicate_is_asked_not_allowed(tmp_path: Path):
    def broken(_data: ShellIn) -> str:
        raise RuntimeError("boom")

    shell = build_tool(
        name="Shell2",
        input_model=ShellIn,
        call=lambda _d, _c: "ran",
        description="x",
        read_only=True,
        shell_command=broken,
    )
    approver = ScriptedApprover(ApprovalDecision("deny"))
    context = _context(tmp_path, [shell], mode="bypassPermissions")
    call = ToolCall("t1", "Shell2", {"command": "ls"})
    result = await _pipeline(tmp_path, PermissionEngine(approver=approver)).run(call, context)
    assert result.is_error and len(approver.asked) == 1


def test_read_denied_lets_search_tools_drop_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "secrets")
    context = _context(tmp_path, [], rules={"session": {"deny": ["Read(./secrets/**)"]}})
    hidden = read_denied(context)
    assert hidden(str(tmp_path / "secrets" / "key")) and hidden("alias/key")
    assert not hidden("src/app.py")


async def test_always_allow_suggests_a_path_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    """`Edit(notes.md)` for a file in the working directory (not `Edit(//<abs>/notes.md)`),
    `Edit(//etc/hosts)` outside it; the prompt says why once, and the rule it shows is the
    rule that is added and then allows the next edit."""
    from jupyter_toolhost.jupyter.widgets.approval import prompt_html

    approver = ScriptedApprover(
        ApprovalDecision("always"), ApprovalDecision("deny"), ApprovalDecision("deny")
    )
    engine = PermissionEngine(approver=approver, home=str(tmp_path / "home"))
    context = _context(tmp_path, [EDIT])
    pipeline = _pipeline(tmp_path, engine)
    (tmp_path / "data").mkdir()
    for name in ("notes.md", "data/raw.csv"):
        (tmp_path / name).write_text("x")

    def edit(path: str, n: int) -> ToolCall:
        return ToolCall(id=f"toolu_{n}", name="Edit", input={"file_path": path})

    first = await pipeline.run(edit("notes.md", 1), context)
    assert not first.is_error
    asked = approver.asked[0]
    assert asked.suggested_rules == ("Edit(notes.md)",)
    assert context.permission_context.rules["session"]["allow"] == ("Edit(notes.md)",)
    shown = prompt_html(asked)
    assert shown.count("it writes notes.md") == 1, shown
    assert not (await pipeline.run(edit(str(tmp_path / "notes.md"), 2), context)).is_error
    assert len(approver.asked) == 1  # the saved rule allowed the same file by its full path

    await pipeline.run(edit("data/raw.csv", 3), context)
    assert approver.asked[1].suggested_rules == ("Edit(data/raw.csv)",)
    await pipeline.run(edit("/etc/hosts", 4), context)
    assert approver.asked[2].suggested_rules == ("Edit(//etc/hosts)",)
