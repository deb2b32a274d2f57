"""Skill (a skill found, listed by description, loaded) and EnterWorktree/ExitWorktree (a
worktree created and removed in a temporary git repository) through the real loop."""

from __future__ import annotations

import subprocess
from pathlib import Path

from session_support import Router, last_results, result_text, session_for

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, skill, worktree
from jupyter_toolhost.tools.worktree import current_worktree, effective_cwd

SKILL_MD = """---
name: csv-report
description: Summarise a CSV file as a markdown report
allowed-tools: [Read, "Bash(wc:*)"]
---
# CSV report

SECRET-BODY-MARKER: read $ARGUMENTS, count its rows, write report.md.
"""


async def test_skill_is_listed_by_description_and_loaded_when_called(tmp_path: Path) -> None:
    folder = tmp_path / ".toolhost" / "skills" / "csv-report"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD)
    home = tmp_path / "home"
    (home / ".toolhost" / "skills" / "user-only").mkdir(parents=True)
    (home / ".toolhost" / "skills" / "user-only" / "SKILL.md").write_text("Greets people.\n")
    router = Router(
        {
            "MAIN-SKILL": [
                Turn(
                    [
                        tool_use("Skill", {"skill": "csv-report", "args": "sales.csv"}),
                        tool_use("Skill", {"skill": "nope"}),
                    ]
                ),
                Turn([text("Following the skill.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        tool = skill.make_tool(cwd=tmp_path, home=home)
        session = session_for(server, tmp_path, [tool])
        assert await session.run("MAIN-SKILL: report on sales.csv") == "Following the skill."

    assert server.errors == []
    system = "".join(block["text"] for block in router.seen["MAIN-SKILL"][0]["system"])
    assert "- csv-report: Summarise a CSV file as a markdown report" in system
    assert "- user-only: Greets people." in system
    assert "SECRET-BODY-MARKER" not in system
    loaded, unknown = last_results(router.seen["MAIN-SKILL"][1])
    body = result_text(loaded)
    assert "SECRET-BODY-MARKER: read sales.csv, count its rows" in body
    assert str(folder) in body
    assert unknown.get("is_error") and "csv-report, user-only" in result_text(unknown)
    rules = session.context.permission_context.rules["skill:csv-report"]
    assert rules["allow"] == ("Read", "Bash(wc:*)")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("print('hi')\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


async def test_worktree_created_used_and_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo").resolve()
    router = Router(
        {
            "MAIN-WT": [
                Turn([tool_use("EnterWorktree", {"name": "try-it"})]),
                Turn([tool_use("Bash", {"command": "pwd -P; echo change > new.txt"})]),
                Turn([tool_use("ExitWorktree", {"action": "remove"})]),
                Turn([tool_use("ExitWorktree", {"action": "remove", "discard_changes": True})]),
                Turn([tool_use("Bash", {"command": "pwd -P"})]),
                Turn([text("Back.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, repo / "src", [*worktree.make_tools(), bash.make_tool()])
        assert await session.run("MAIN-WT") == "Back."

    assert server.errors == []
    seen = router.seen["MAIN-WT"]
    tree_path = repo / ".toolhost" / "worktrees" / "try-it"
    [entered] = last_results(seen[1])
    assert f"Created worktree {tree_path} on new branch toolhost/try-it" in result_text(entered)
    # The session moved into the same sub-directory of the worktree; the shell followed.
    [shell] = last_results(seen[2])
    assert result_text(shell).splitlines()[0] == str(tree_path / "src")
    [refused] = last_results(seen[3])
    assert refused.get("is_error") and "uncommitted changes" in result_text(refused)
    assert "new.txt" in result_text(refused)
    [removed] = last_results(seen[4])
    assert result_text(removed).startswith(f"Removed worktree {tree_path}")
    [back] = last_results(seen[5])
    assert result_text(back).splitlines()[0] == str(repo / "src")
    assert not tree_path.exists()
    assert "toolhost/try-it" not in git(repo, "branch", "--list")
    assert current_worktree(session.context) is None
    assert effective_cwd(session.context) == repo / "src"
    # Only the session's own files show up; .toolhost/worktrees is ignored.
    assert git(repo, "status", "--porcelain") == "?? src/.toolhost/"


async def test_worktree_kept_and_clear_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo").resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    router = Router(
        {
            "MAIN-KEEP": [
                Turn([tool_use("EnterWorktree", {"name": "keep-me"})]),
                Turn([tool_use("EnterWorktree", {"name": "second"})]),
                Turn([tool_use("ExitWorktree", {"action": "keep"})]),
                Turn([tool_use("ExitWorktree", {"action": "keep"})]),
                Turn([text("kept")]),
            ],
            "MAIN-PLAIN": [
                Turn(
                    [
                        tool_use("EnterWorktree", {"name": "x"}),
                        tool_use("EnterWorktree", {"name": "../bad"}),
                    ]
                ),
                Turn([text("not a repo")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, repo, worktree.make_tools())
        assert await session.run("MAIN-KEEP") == "kept"
        outside = session_for(server, plain, worktree.make_tools())
        assert await outside.run("MAIN-PLAIN") == "not a repo"

    assert server.errors == []
    seen = router.seen["MAIN-KEEP"]
    [again] = last_results(seen[2])
    assert again.get("is_error") and "Already in a worktree" in result_text(again)
    [kept] = last_results(seen[3])
    assert "Kept worktree" in result_text(kept)
    assert (repo / ".toolhost" / "worktrees" / "keep-me" / "src" / "app.py").exists()
    assert "toolhost/keep-me" in git(repo, "branch", "--list")
    [nothing] = last_results(seen[4])
    assert nothing.get("is_error") and "Not in a worktree" in result_text(nothing)
    not_repo, bad_name = last_results(router.seen["MAIN-PLAIN"][1])
    assert not_repo.get("is_error") and "is not inside a git repository" in result_text(not_repo)
    assert bad_name.get("is_error") and "Invalid worktree name" in result_text(bad_name)
