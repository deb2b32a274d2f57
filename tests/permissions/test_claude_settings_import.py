"""Claude Code's settings files, imported on request: real files in a temporary HOME and
project, real calls through a `Session` against the loopback Messages API, real hooks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from jupyter_toolhost.agent.session import Session
from jupyter_toolhost.core.types import PermissionMode
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.host import AgentHost
from jupyter_toolhost.jupyter.magic.commands import run_line
from jupyter_toolhost.jupyter.magic.magics import HELP
from jupyter_toolhost.jupyter.magic.options import parse_command
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions import PureResolver, compile_rules, decide, load_settings
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools

MODEL = "claude-sonnet-4-5"
TOUCH = {"command": "touch made.txt", "description": "make a file"}


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project, home): HOME points at the temporary home for the whole test."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("JUPYTER_TOOLHOST_PERMISSION_MODE", "JUPYTER_TOOLHOST_HOME"):
        monkeypatch.delenv(name, raising=False)
    return project, home


def write(path: Path, data: object | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def turn_on(folder: Path, value: bool = True) -> None:
    write(folder / ".toolhost" / "settings.json", {"importClaudeCodeSettings": value})


def session(server: MessagesServer, project: Path, mode: PermissionMode) -> Session:
    return Session(
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=project,
        trust_folder=True,  # the folder's settings are the test's own
        tools=[t for t in builtin_tools(cwd=project) if t.name == "Bash"],
        permission_mode=mode,
        retry_backoff_s=0.01,
    )


async def touch(project: Path, mode: PermissionMode, *, now: bool = False) -> dict[str, Any]:
    """Let the model run `touch made.txt` once; the tool_result it got back.
    `now`: import the Claude settings with the session's method before the run."""
    with MessagesServer([Turn([tool_use("Bash", TOUCH)]), Turn([text("Done.")])]) as server:
        running = session(server, project, mode)
        if now:
            running.import_claude_settings()
        await running.run("Make a file.")
        [result] = server.requests[-1].body["messages"][-1]["content"]
    return result


def test_off_by_default_a_claude_deny_rule_does_nothing(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(touch:*)"]}})
    write(home / ".claude" / "settings.json", {"permissions": {"deny": ["Read"]}})
    settings = load_settings(cwd=project, home=home)
    assert settings.claude_imports == [] and settings.problems == []
    assert not any(".claude" in source for source in settings.rules)


async def test_off_by_default_the_call_runs(dirs: tuple[Path, Path]) -> None:
    project, _ = dirs
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(touch:*)"]}})
    result = await touch(project, "bypassPermissions")
    assert not result.get("is_error") and (project / "made.txt").exists()


@pytest.mark.parametrize("where", ["project", "user"])
async def test_the_setting_turns_it_on_and_a_claude_deny_denies_a_real_call(
    dirs: tuple[Path, Path], where: str
) -> None:
    project, home = dirs
    turn_on(project if where == "project" else home)
    claude = write(
        project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(touch:*)"]}}
    )
    result = await touch(project, "bypassPermissions")  # deny beats every mode
    assert result.get("is_error") is True
    assert "Bash(touch:*)" in json.dumps(result["content"])
    assert not (project / "made.txt").exists()
    settings = load_settings(cwd=project, home=home)
    assert [done.source for done in settings.claude_imports] == [".claude/settings.json"]
    assert settings.sources[".claude/settings.json"].label == str(claude)


def test_the_most_specific_toolhost_file_decides(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    turn_on(home, True)
    turn_on(project, False)
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash"]}})
    assert load_settings(cwd=project, home=home).claude_imports == []
    assert load_settings(cwd=project, home=home, import_claude=True).claude_imports != []


async def test_a_claude_allow_rule_allows_what_dont_ask_would_deny(
    dirs: tuple[Path, Path],
) -> None:
    project, home = dirs
    write(
        project / ".claude" / "settings.local.json", {"permissions": {"allow": ["Bash(touch:*)"]}}
    )
    denied = await touch(project, "dontAsk")
    assert denied.get("is_error") is True and not (project / "made.txt").exists()
    turn_on(home)
    allowed = await touch(project, "dontAsk")
    assert not allowed.get("is_error"), allowed
    assert (project / "made.txt").exists()


def test_ask_and_deny_rules_of_the_user_file_apply_as_written(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    turn_on(home)
    user = write(
        home / ".claude" / "settings.json",
        {"permissions": {"ask": ["Bash(git push:*)"], "deny": ["Bash(rm:*)"]}},
    )
    write(project / ".toolhost" / "settings.json", {"permissions": {"allow": ["Bash"]}})
    settings = load_settings(cwd=project, home=home, import_claude=True)
    context = settings.permission_context(env={})
    compiled = compile_rules(
        context.rules, cwd=str(project), home=str(home), sources=settings.sources
    )
    [bash] = [t for t in builtin_tools(cwd=project) if t.name == "Bash"]

    def verdict(command: str) -> Any:
        return decide(
            tool=bash,
            input=bash.input_model.model_validate({"command": command}),
            rules=compiled,
            mode=context.mode,
            cwd=str(project),
            resolver=PureResolver(home=str(home)),
        )

    asked, denied = verdict("git push origin main"), verdict("rm -rf build")
    assert asked.behavior == "ask" and denied.behavior == "deny"
    assert asked.reason is not None and asked.reason.source == str(user)
    assert denied.reason is not None and denied.reason.source == str(user)
    assert verdict("ls").behavior == "allow"


def test_default_mode_is_left_out_and_directories_and_hooks_come_in(
    dirs: tuple[Path, Path],
) -> None:
    project, home = dirs
    extra = home / "datasets"
    write(
        project / ".claude" / "settings.json",
        {
            "permissions": {
                "allow": ["Read"],
                "defaultMode": "bypassPermissions",
                "additionalDirectories": [str(extra)],
            },
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}],
                "SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}],
            },
            "env": {"FOO": "1"},
        },
    )
    settings = load_settings(cwd=project, home=home, import_claude=True)
    assert settings.problems == []
    assert settings.default_mode is None
    assert settings.permission_context(env={}).mode == "default"
    assert settings.additional_directories == (str(extra),)
    [hook] = settings.hooks
    assert hook.matcher == "*" and hook.source.endswith(".claude/settings.json")
    [done] = settings.claude_imports
    assert done.summary() == (
        ".claude/settings.json: 1 allow, 0 ask, 0 deny rules, 1 hook, 1 directory "
        "(left out: defaultMode 'bypassPermissions' (the mode is this project's to choose); "
        "hooks.SessionStart (no such hook event here))"
    )


async def test_hooks_of_a_claude_file_run(dirs: tuple[Path, Path]) -> None:
    project, _ = dirs
    hook = 'printf "%s" "$CLAUDE_PROJECT_DIR" > "$CLAUDE_PROJECT_DIR/hook-ran.txt"'
    write(
        project / ".claude" / "settings.json",
        {
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]
            }
        },
    )
    result = await touch(project, "bypassPermissions", now=True)
    assert not result.get("is_error"), result
    assert (project / "hook-ran.txt").read_text() == str(project.resolve())


def test_a_malformed_claude_file_is_a_problem_with_its_path_and_line(
    dirs: tuple[Path, Path],
) -> None:
    project, home = dirs
    broken = write(project / ".claude" / "settings.json", '{\n  "permissions": {\n    "deny": [\n}')
    bad_rule = write(
        home / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(", "Read"]}}
    )
    settings = load_settings(cwd=project, home=home, import_claude=True)
    texts = [str(problem) for problem in settings.problems]
    assert any(t.startswith(f"{broken}:4: invalid JSON") for t in texts), texts
    assert any(t.startswith(f"{bad_rule}:") and "permissions.allow" in t for t in texts), texts
    # The good rule of the half-good file still loads; the broken file imports nothing.
    assert [d.source for d in settings.claude_imports] == ["~/.claude/settings.json"]
    assert settings.rules["~/.claude/settings.json"]["allow"] == ("Read",)


# ── %agent import-claude-settings and %agent rules ───────────────────────────────────────


@pytest.fixture
def host(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentHost]:
    project, _ = dirs
    monkeypatch.chdir(project)
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(project / ".toolhost"))
    yield AgentHost(InteractiveShell.instance(), ToolHost())


def test_the_command_imports_says_what_and_rules_show_the_claude_files(
    host: AgentHost, dirs: tuple[Path, Path]
) -> None:
    project, home = dirs
    assert parse_command("import-claude-settings").name == "import-claude-settings"
    assert "import-claude-settings" in HELP and "Off by default" in HELP
    nothing = run_line(host, "import-claude-settings")
    assert "Nothing imported" in str(nothing)

    write(
        project / ".claude" / "settings.json",
        {"permissions": {"allow": ["Bash(npm test:*)", "Read"], "deny": ["Bash(rm:*)"]}},
    )
    write(home / ".claude" / "settings.json", {"permissions": {"ask": ["WebFetch"]}})
    write(project / ".claude" / "settings.local.json", '{"permissions": {"allow": [}')
    # An untrusted folder's Claude Code files give only their denies and asks.
    held = str(run_line(host, "import-claude-settings"))
    assert ".claude/settings.json: 0 allow, 0 ask, 1 deny rules, 0 hooks" in held
    assert "this folder is not trusted" in held
    write(home / ".toolhost" / "settings.json", {"trustedFolders": [str(project.resolve())]})
    run_line(host, "reset")
    shown = str(run_line(host, "import-claude-settings"))
    assert "Imported Claude Code settings into this conversation:" in shown
    assert "~/.claude/settings.json: 0 allow, 1 ask, 0 deny rules, 0 hooks" in shown
    assert ".claude/settings.json: 2 allow, 0 ask, 1 deny rules, 0 hooks" in shown
    assert f"Problems:\n  {project.resolve()}/.claude/settings.local.json:1: invalid JSON" in shown

    rules = run_line(host, "rules")
    assert rules is not None
    rows = [line.split() for line in rules.data["text/plain"].splitlines()]
    assert ["deny", "Bash(rm:*)", ".claude/settings.json"] in rows
    assert ["allow", "Read", ".claude/settings.json"] in rows
    assert ["ask", "WebFetch", "~/.claude/settings.json"] in rows

    again = str(run_line(host, "import-claude-settings"))
    assert "already imported" in again and "Problems:" in again
