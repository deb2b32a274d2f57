"""Usability, measured: everyday data-science commands are not asked about where Claude Code
runs them, with deny rules present elsewhere in the project, and the denied stays denied.

The commands and the project are `everyday_commands.py`'s. `CLAUDE_CODE_ALLOWED` is what
Claude Code 2.1.328 ran without asking in default mode in the same project with the same
rules, in a real run of ``python -m benchmarks everyday_commands`` (see that benchmark; no
test needs Claude Code). This project asks no more often than Claude Code on the list, with
the Bash sandbox off and on, and each command it asks that Claude Code runs is a control kept
on purpose, named with its reason (`STRICTER`, inline code under a command deny).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from everyday_commands import COMMANDS, CONTROLS, WRITTEN, build_project

from jupyter_toolhost import Session
from jupyter_toolhost.core.context import SandboxOptions
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.tools.bash.sandbox import bwrap_problem

CI = os.environ.get("CI") == "true"
CLAUDE_CODE_ASKED = frozenset(
    {
        "pip list",
        "pip show pip",
        "awk -F, '{print $2}' data.csv",
        "sort -t, -k3 -n data.csv | head",
    }
)
"""The commands Claude Code 2.1.328 asked about (run 2026-12-03, default mode)."""
CLAUDE_CODE_ALLOWED = tuple(c for c in COMMANDS if c not in CLAUDE_CODE_ASKED)


@pytest.fixture(scope="module", params=[False, True], ids=["sandbox off", "sandbox on"])
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    sandbox: bool = request.param
    if sandbox and (problem := bwrap_problem()[1]) is not None:
        if CI:
            pytest.fail(f"CI needs bubblewrap for the sandboxed decisions: {problem}")
        pytest.skip(problem)
    base = tmp_path_factory.mktemp("everyday")
    project = build_project(base / "project", settings_dir=".toolhost")
    (base / "home").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(base / "home"))
        for name in ("JUPYTER_TOOLHOST_PERMISSION_MODE", "JUPYTER_TOOLHOST_HOME"):
            patch.delenv(name, raising=False)
        made = Session(
            model=AnthropicModel(base_url="http://127.0.0.1:9", api_key="unused"),
            model_id="claude-sonnet-4-5",
            cwd=project,
            trust_folder=True,  # the folder's settings are the test's own
            write_transcript=False,
            sandbox=SandboxOptions(enabled=sandbox),
        )
        assert not made.settings_problems
        yield made


def _default(session: Session, command: str) -> str:
    return session.check("Bash", {"command": command}).mode("default").behavior


def test_the_list_is_long_and_holds_the_known_hard_cases() -> None:
    assert len(COMMANDS) >= 40 and len(set(COMMANDS)) == len(COMMANDS)
    for named in ("git diff", "git log -p -1 -- analysis.py", "echo $HOME", "du -sh ."):
        assert named in COMMANDS
    assert any(c.startswith("python3 -c ") for c in COMMANDS)
    assert {"find . -name '*.py'", "grep -rn import --include='*.py' .", "ls -R"} <= set(COMMANDS)


STRICTER = {
    "ls -R": (
        False,
        "it prints the names inside a Read-denied folder; without the sandbox only the "
        "command check guards them",
    ),
}
"""Commands asked here that Claude Code runs, with the reason, by command: (asked with the
sandbox on too?, why). Each is a control kept on purpose; the count still may not exceed
Claude Code's."""
INLINE_CODE_REASON = (
    "inline code is code this session wrote: under a command deny it can't be checked "
    "(Bash(rm:*) says nothing about what python3 -c does)"
)


def _stricter(command: str, *, sandbox: bool) -> str | None:
    if command.startswith("python3 -c "):
        return INLINE_CODE_REASON
    on_too, why = STRICTER.get(command, (True, ""))
    return why if (why and (on_too or not sandbox)) else None


def test_ours_asks_no_more_often_than_claude_code(session: Session) -> None:
    sandbox = bool(session.context.options.sandbox.enabled)
    decided = {c: _default(session, c) for c in COMMANDS}
    ours = sum(b != "allow" for b in decided.values())
    print(
        f"\neveryday commands, default mode: ours not allowed {ours} of {len(COMMANDS)}, "
        f"Claude Code {len(CLAUDE_CODE_ASKED)}"
    )
    assert ours <= len(CLAUDE_CODE_ASKED)
    asked = [c for c in CLAUDE_CODE_ALLOWED if decided[c] != "allow"]
    unexplained = [c for c in asked if _stricter(c, sandbox=sandbox) is None]
    assert not unexplained, f"asked here, run by Claude Code, for no stated reason: {unexplained}"


@pytest.mark.parametrize("command", CONTROLS)
def test_the_denied_stays_denied(session: Session, command: str) -> None:
    report = session.check("Bash", {"command": command})
    modes = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
    assert [report.mode(m).behavior for m in modes] == ["deny"] * 5, str(report)


def test_the_project_is_what_the_list_expects(session: Session) -> None:
    cwd = Path(session.context.cwd)
    assert (cwd / "secrets" / "key.txt").is_file() and (cwd / ".git").is_dir()
    assert (cwd / "protected" / "config.yaml").is_file() and (cwd / "data.csv").is_file()


def test_after_the_session_wrote_a_script_a_makefile_and_notes(session: Session) -> None:
    """Claude Code does not track what a session wrote, so its decisions stay as above; ours
    asks more only where a command would run a file this session wrote (a named reason)."""
    from dataclasses import replace

    cwd = Path(session.context.cwd)
    paths = tuple(str(cwd / name) for name in WRITTEN)
    before = session.context.get_app_state()
    session.context.set_app_state(lambda state: replace(state, written_paths=paths))
    try:
        sandbox = bool(session.context.options.sandbox.enabled)
        reports = {c: session.check("Bash", {"command": c}).mode("default") for c in COMMANDS}
    finally:
        session.context.set_app_state(lambda _state: before)
    ours = sum(r.behavior != "allow" for r in reports.values())
    print(
        f"\neveryday commands after writing {', '.join(WRITTEN)}, default mode: ours not "
        f"allowed {ours} of {len(COMMANDS)}, Claude Code {len(CLAUDE_CODE_ASKED)}"
    )
    asked = [c for c in CLAUDE_CODE_ALLOWED if reports[c].behavior != "allow"]
    named = [c for c in asked if "which this session wrote" in reports[c].message]
    assert sorted(named) == ["python analysis.py", "python3 analysis.py"], named
    unexplained = [c for c in asked if c not in named and _stricter(c, sandbox=sandbox) is None]
    assert not unexplained, f"asked after writing, for no stated reason: {unexplained}"
    assert ours <= len(CLAUDE_CODE_ASKED) + len(named)
