"""The session's state in typed fields, and its rules through `add_rule` and `rules`.

Each test drives the real loop and the real `anthropic` client against the loopback
Messages server, with real files, a real git repository and real shell commands.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from session_support import Router, ScriptedApprover, last_results, result_text, session_for

from jupyter_toolhost.core.context import SandboxOptions
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.permissions.rules.rules import RuleError
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, plan_mode, read, web_fetch, worktree


def _system_text(body: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in body.get("system", []))


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        check=True,
    )


async def test_the_worktree_tool_moves_the_loop_through_the_typed_field(tmp_path: Path) -> None:
    repo = (tmp_path / "repo").resolve()
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "notes.txt").write_text("in the main checkout\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    tree = repo / ".toolhost" / "worktrees" / "typed"
    router = Router(
        {
            "MAIN-TYPED": [
                Turn([tool_use("EnterWorktree", {"name": "typed"})]),
                Turn([tool_use("Bash", {"command": "echo changed > notes.txt"})]),
                Turn([tool_use("Read", {"file_path": "notes.txt"})]),
                Turn([text("Done.")]),
            ]
        }
    )
    tools = [*worktree.make_tools(), bash.make_tool(), read.make_tool()]
    with MessagesServer(router) as server:
        session = session_for(server, repo / "src", tools)
        state = session.context.get_app_state()
        assert state.working_directory is None and state.shell_cwd is None
        assert await session.run("MAIN-TYPED") == "Done."

    assert server.errors == []
    state = session.context.get_app_state()
    assert state.working_directory == tree / "src"
    assert state.shell_cwd == str(tree / "src")
    assert "cwd" not in state.extras and "bash.cwd" not in state.extras
    seen = router.seen["MAIN-TYPED"]
    # The loop's next request works in the worktree: its system prompt says so, and a
    # relative path of a later call resolves there (the shell wrote that file).
    assert f"Working directory: {repo / 'src'}" in _system_text(seen[0])
    assert f"Working directory: {tree / 'src'}" in _system_text(seen[1])
    [shown] = last_results(seen[3])
    assert "changed" in result_text(shown)
    assert (repo / "src" / "notes.txt").read_text() == "in the main checkout\n"


async def test_a_plan_reaches_the_approver_as_a_field(tmp_path: Path) -> None:
    router = Router(
        {
            "MAIN-PLAN": [
                Turn([tool_use("EnterPlanMode", {})]),
                Turn([tool_use("ExitPlanMode", {"plan": "1. Read\n2. Write"})]),
                Turn([text("Planned.")]),
            ]
        }
    )
    approver = ScriptedApprover(ApprovalDecision("allow"))
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, plan_mode.make_tools(), approver=approver)
        assert await session.run("MAIN-PLAN") == "Planned."

    [asked] = approver.asked
    assert asked.tool_name == "ExitPlanMode" and asked.plan == "1. Read\n2. Write"
    assert session.permission_mode == "default"


def test_add_rule_and_rules(tmp_path: Path) -> None:
    with MessagesServer() as server:
        session = session_for(server, tmp_path, [bash.make_tool()], permission_mode="default")
    assert "session" not in session.rules
    assert session.check("Bash", "npm test").mode("default").behavior == "ask"

    session.add_rule("Bash(npm test:*)")
    session.add_rule("Bash(npm test:*)")  # the same rule is kept once
    session.add_rule("Bash(rm:*)", "deny")
    assert session.rules["session"] == {"allow": ("Bash(npm test:*)",), "deny": ("Bash(rm:*)",)}
    assert session.check("Bash", "npm test").mode("default").behavior == "allow"
    assert session.check("Bash", "rm -f x").mode("bypassPermissions").behavior == "deny"

    with pytest.raises(RuleError):
        session.add_rule("Bash(unclosed")
    with pytest.raises(ValueError, match="allow, ask or deny"):
        session.add_rule("Read", "never")  # type: ignore[arg-type]
    assert session.rules["session"]["allow"] == ("Bash(npm test:*)",)


async def test_starting_rules_hide_a_tool_denied_whole(tmp_path: Path) -> None:
    router = Router({"MAIN-RULES": [Turn([text("Fine.")])]})
    tools = [read.make_tool(), web_fetch.make_tool()]
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, tools, rules=[("WebFetch", "deny")])
        assert session.rules["session"] == {"deny": ("WebFetch",)}
        assert await session.run("MAIN-RULES") == "Fine."
    [body] = router.seen["MAIN-RULES"]
    assert [tool["name"] for tool in body["tools"]] == ["Read"]


def test_the_sandbox_settings_are_the_sessions_own(tmp_path: Path, monkeypatch: Any) -> None:
    from jupyter_toolhost.tools.bash import sandbox

    monkeypatch.setenv(sandbox.SANDBOX_ENV, "0")
    chosen = SandboxOptions(enabled=True, hidden_paths=(str(tmp_path / "secret.json"),))
    with MessagesServer() as server:
        session = session_for(server, tmp_path, [bash.make_tool()], sandbox=chosen)
        default = session_for(server, tmp_path / "other", [bash.make_tool()])
    context = session.context
    assert context.options.sandbox is chosen
    assert sandbox.setting(context) == "required"
    # Read once when the session started: a later change of the environment is ignored.
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    assert sandbox.setting(default.context) == "off"
    assert chosen.environment is not None and chosen.environment[sandbox.SANDBOX_ENV] == "0"
