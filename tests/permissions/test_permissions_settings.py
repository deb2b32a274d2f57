"""Settings files of every scope, read from real files — broken ones included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_permissions_tools import EDIT, SHELL

from jupyter_toolhost.permissions import (
    MODE_ENV,
    PureResolver,
    RuleError,
    SettingsError,
    compile_rules,
    decide,
    load_settings,
    save_rule,
)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".toolhost").mkdir(parents=True)
    (home / ".toolhost").mkdir(parents=True)
    return project, home


def _write(path: Path, data: object | str) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def test_every_scope_loads_and_a_deny_anywhere_beats_an_allow_anywhere(dirs):
    project, home = dirs
    _write(home / ".toolhost/settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    _write(project / ".toolhost/settings.json", {"permissions": {"allow": ["Bash(rm:*)"]}})
    local = {"permissions": {"allow": ["Edit(/src/**)"], "defaultMode": "acceptEdits"}}
    _write(project / ".toolhost/settings.local.json", local)
    settings = load_settings(cwd=project, home=home, session_rules={"ask": ["Bash(git push:*)"]})
    assert settings.problems == []
    assert set(settings.rules) == {"userSettings", "projectSettings", "localSettings", "session"}
    context = settings.permission_context(env={})
    assert context.mode == "acceptEdits"
    compiled = compile_rules(
        context.rules, cwd=str(project), home=str(home), sources=settings.sources
    )
    resolver = PureResolver(home=str(home))

    def run(tool, raw):
        parsed = tool.input_model.model_validate(raw)
        return decide(
            tool=tool,
            input=parsed,
            rules=compiled,
            mode=context.mode,
            cwd=str(project),
            resolver=resolver,
        )

    denied = run(SHELL, {"command": "rm -rf build"})
    assert denied.behavior == "deny" and denied.reason is not None
    assert denied.reason.source == str(home / ".toolhost/settings.json")
    edit = run(EDIT, {"file_path": "src/a.py"})
    assert edit.reason is not None and edit.reason.source == str(
        project / ".toolhost/settings.local.json"
    )
    assert run(SHELL, {"command": "git push"}).behavior == "ask"


def test_mode_precedence_env_then_code_then_settings(dirs):
    project, home = dirs
    _write(project / ".toolhost/settings.json", {"permissions": {"defaultMode": "plan"}})
    settings = load_settings(cwd=project, home=home)
    assert settings.resolve_mode(env={}) == "plan"
    assert settings.resolve_mode("acceptEdits", env={}) == "acceptEdits"
    assert settings.resolve_mode("acceptEdits", env={MODE_ENV: "dontAsk"}) == "dontAsk"
    assert settings.resolve_mode("acceptEdits", env={MODE_ENV: "yolo"}) == "acceptEdits"
    assert "unknown mode 'yolo'" in str(settings.problems[-1])


def test_invalid_json_is_reported_with_its_line_and_the_other_files_still_load(dirs):
    project, home = dirs
    broken = _write(project / ".toolhost/settings.json", '{\n  "permissions": {\n    "allow": [\n')
    _write(home / ".toolhost/settings.json", {"permissions": {"deny": ["Read(~/.ssh/**)"]}})
    settings = load_settings(cwd=project, home=home)
    (problem,) = settings.problems
    assert isinstance(problem, SettingsError)
    assert problem.file == str(broken) and problem.line == 4
    assert "invalid JSON" in str(problem) and f"{broken}:4:" in str(problem)
    assert settings.rules["userSettings"]["deny"] == ("Read(~/.ssh/**)",)


def test_a_bad_rule_is_reported_and_its_neighbours_kept(dirs):
    project, home = dirs
    text = json.dumps(
        {
            "permissions": {
                "allow": ["Bash(ls *)", "WebFetch(example.com)", "Read(./docs/**)"],
                "deny": ["Bash(rm", "Bash(rm:*)"],
                "defaultMode": "sometimes",
            }
        },
        indent=2,
    )
    path = _write(project / ".toolhost/settings.json", text)
    settings = load_settings(cwd=project, home=home)
    messages = [(p.line, p.message) for p in settings.problems]
    assert settings.rules["projectSettings"]["allow"] == ("Bash(ls *)", "Read(./docs/**)")
    assert settings.rules["projectSettings"]["deny"] == ("Bash(rm:*)",)
    lines = text.splitlines()
    assert any("domain:host" in m and "WebFetch(example.com)" in lines[n - 1] for n, m in messages)
    assert any("missing ')'" in m and '"Bash(rm",' in lines[n - 1] for n, m in messages)
    assert any(
        m.startswith("permissions.defaultMode: must be one of default,")
        and m.endswith('not the string "sometimes"')
        for _, m in messages
    )
    assert all(p.file == str(path) for p in settings.problems)


def test_wrong_shapes_and_hooks_are_reported(dirs):
    project, home = dirs
    data = {
        "permissions": {"allow": "Bash(ls)"},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "true", "timeout": 5}],
                },
                {"matcher": "(", "hooks": []},
                {"matcher": "Edit", "hooks": [{"type": "command", "command": ""}]},
            ],
            "BeforeLunch": [],
        },
    }
    _write(project / ".toolhost/settings.json", data)
    _write(home / ".toolhost/settings.json", "[1, 2]")
    settings = load_settings(cwd=project, home=home)
    text = "\n".join(str(p) for p in settings.problems)
    assert 'permissions.allow: must be a list of rule strings such as ["Bash(npm test)"' in text
    assert "not a valid regex" in text and "non-empty 'command'" in text
    assert "unknown hook event 'BeforeLunch'" in text
    assert "must be a JSON object" in text
    (hook,) = settings.hooks
    assert (hook.event, hook.matcher, hook.command, hook.timeout) == (
        "PreToolUse",
        "Bash",
        "true",
        5,
    )


def test_save_rule_adds_to_the_project_file_and_keeps_everything_else(dirs):
    project, home = dirs
    path = project / ".toolhost/settings.json"
    _write(path, {"permissions": {"allow": ["Bash(ls *)"]}, "hooks": {}, "theme": "dark"})
    assert save_rule("Bash(make test)", cwd=project, home=home) == path
    save_rule("Bash(make test)", cwd=project, home=home)
    save_rule("Read(~/notes/**)", "deny", scope="user", cwd=project, home=home)
    data = json.loads(path.read_text())
    assert data["permissions"]["allow"] == ["Bash(ls *)", "Bash(make test)"]
    assert data["theme"] == "dark" and data["hooks"] == {}
    user = json.loads((home / ".toolhost/settings.json").read_text())
    assert user == {"permissions": {"deny": ["Read(~/notes/**)"]}}


def test_save_rule_never_overwrites_a_broken_file_or_saves_a_bad_rule(dirs):
    project, home = dirs
    path = _write(project / ".toolhost/settings.json", "{ not json")
    with pytest.raises(SettingsError, match="not changed"):
        save_rule("Bash(ls)", cwd=project, home=home)
    assert path.read_text() == "{ not json"
    with pytest.raises(RuleError):
        save_rule("Bash(", scope="local", cwd=project, home=home)
    assert not (project / ".toolhost/settings.local.json").exists()
