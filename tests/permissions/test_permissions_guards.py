"""The guards no rule or mode waives, on a real tree: protected folders, trees that hold a
denied path, commands that cannot be checked, and the shell's tracked directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_permissions_tools import EDIT, READ, SHELL, WRITE

from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PermissionMode, PermissionResult
from jupyter_toolhost.permissions import OsResolver, compile_rules, decide

RULES = {
    "deny": ["Read(./secrets/**)", "Read(**/.env)", "Bash(rm:*)", "Edit(./protected/**)"],
    "allow": ["Bash(git status)", "Bash(git commit:*)", "Bash(python3:*)"],
}
MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "auto", "dontAsk")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "project"
    for folder in ("secrets", "src/pkg", "protected", ".toolhost", ".git/hooks", "docs"):
        (root / folder).mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("SECRET")
    (root / "src" / "a.py").write_text("# TODO\n")
    (root / "docs" / "guide.md").write_text("TODO\n")
    (root / "protected" / "a.txt").write_text("keep")
    (root / ".gitignore").write_text("secrets/\n")
    _git(root, "init", "-q")
    _git(root, "add", "src", "docs", ".gitignore")
    _git(root, "commit", "-q", "-m", "start")
    return root


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env)


def _decide(
    tool: Tool[Any],
    raw: dict[str, Any],
    root: Path,
    *,
    mode: PermissionMode = "default",
    shell_cwd: Path | None = None,
    sandboxed: bool = False,
    rules: dict[str, list[str]] | None = None,
) -> PermissionResult:
    resolver = OsResolver(home=str(root.parent / "home"))
    compiled = compile_rules(
        {"projectSettings": rules if rules is not None else RULES},
        cwd=str(root),
        home=resolver.home(),
    )
    return decide(
        tool=tool,
        input=tool.input_model.model_validate(raw),
        rules=compiled,
        mode=mode,
        cwd=str(root),
        resolver=resolver,
        shell_cwd=str(shell_cwd) if shell_cwd else None,
        sandboxed=sandboxed,
    )


def _bash(command: str, root: Path, **kw: Any) -> PermissionResult:
    return _decide(SHELL, {"command": command}, root, **kw)


TREE_READERS = [
    "grep -r SECRET .",
    "grep -rn SECRET",
    "grep -R --include=*.txt SECRET .",
    "egrep -rl SEC .",
    "rg SECRET",
    "rg --files",
    "find . -name key.txt",
    "find -type f",
    "tar cf - . ",
    "tar -czf ../out.tgz .",
    "cp -r . ../copy",
    "zip -r ../out.zip .",
    "du -a",
    "ls -R",
    "tree",
    "cat */key.txt",
    "head s*/*",
    "grep -r SECRET ..",
]


@pytest.mark.parametrize("command", TREE_READERS)
def test_a_tree_that_holds_a_denied_path_is_never_allowed_by_a_mode(
    command: str, project: Path
) -> None:
    for mode in ("default", "acceptEdits", "auto"):
        result = _bash(command, project, mode=mode)
        assert result.behavior == "ask", (command, mode, result)
        assert result.reason is not None and result.reason.kind == "safety"
    for mode in ("dontAsk", "bypassPermissions"):
        result = _bash(command, project, mode=mode)
        assert result.behavior == "deny", (command, mode, result)
        assert "denie" in result.message or "deny" in result.message


@pytest.mark.parametrize(
    "command",
    ["git show HEAD", "git log -p", "git diff HEAD~1", "git archive HEAD", "git grep SECRET"],
)
def test_git_contents_that_hold_a_denied_path_are_guarded_even_in_the_sandbox(
    command: str, project: Path
) -> None:
    _git(project, "add", "-f", "secrets/key.txt")
    _git(project, "commit", "-q", "-m", "oops")
    _git(project, "rm", "-q", "--cached", "secrets/key.txt")
    _git(project, "commit", "-q", "-m", "removed again, still in history")
    for sandboxed in (False, True):
        result = _bash(command, project, sandboxed=sandboxed)
        assert result.behavior == "ask", (command, result)
        assert "Read(./secrets/**)" in result.message
        assert _bash(command, project, sandboxed=sandboxed, mode="bypassPermissions").behavior == (
            "deny"
        )


def test_git_contents_without_denied_paths_are_everyday_reads(project: Path) -> None:
    for command in ("git show HEAD", "git log -p", "git diff", "git grep TODO"):
        assert _bash(command, project).behavior == "allow", command


def test_git_configuration_is_protected_unless_a_rule_names_the_command(project: Path) -> None:
    for command in ("git config core.hooksPath /tmp/h", "git config core.fsmonitor 'touch x'"):
        assert _bash(command, project, mode="bypassPermissions").behavior == "ask", command
        assert _bash(command, project, mode="dontAsk").behavior == "deny", command
    rules = {**RULES, "allow": ["Bash(git config user.name:*)"]}
    assert _bash("git config user.name me", project, rules=rules).behavior == "allow"
    assert _bash("git config --get user.name", project).behavior == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "awk 'BEGIN{system(\"rm -f src/a.py\")}'",
        "trap 'rm -f src/a.py' EXIT",
        "git -c core.pager='rm -f src/a.py' log",
        "tar cf /dev/null src --to-command='rm -f src/a.py'",
        "sed -n '1e rm -f src/a.py' src/a.py",
        "rsync -e 'sh -c x' src host:dst",
    ],
)
def test_code_hidden_in_arguments_is_never_allowed_by_a_mode(command: str, project: Path) -> None:
    assert _bash(command, project, mode="bypassPermissions").behavior == "deny", command
    assert _bash(command, project, mode="auto").behavior == "ask", command


def test_in_the_sandbox_a_recursive_read_runs_unasked(project: Path) -> None:
    assert _bash("grep -rn TODO .", project, sandboxed=True).behavior == "allow"
    assert _bash("grep -rn TODO .", project).behavior == "ask"
    # The sandbox hides read-denied paths only: a name deny still holds there.
    assert _bash("rm -rf src", project, sandboxed=True, mode="bypassPermissions").behavior == (
        "deny"
    )


def test_a_tree_without_denied_paths_is_an_everyday_read(project: Path) -> None:
    for command in ("grep -rn TODO src", "find src -name '*.py'", "rg TODO docs", "ls -R src"):
        result = _bash(command, project)
        assert result.behavior == "allow", (command, result)


def test_a_wildcard_deny_is_looked_for_on_disk(project: Path) -> None:
    assert _bash("grep -rn TODO src", project).behavior == "allow"
    (project / "src" / "pkg" / ".env").write_text("TOKEN=1")
    result = _bash("grep -rn TODO src", project)
    assert result.behavior == "ask" and "**/.env" in result.message


def test_a_symlink_into_a_denied_tree_is_found(project: Path) -> None:
    (project / "docs" / "link").symlink_to(project / "secrets")
    assert _bash("grep -rn TODO docs", project).behavior == "ask"
    (project / "links").mkdir()
    (project / "links" / "k").symlink_to(project / "secrets" / "key.txt")
    assert _bash("cat links/*", project, mode="bypassPermissions").behavior == "deny"


def test_a_glob_is_judged_by_the_files_it_can_reach(project: Path) -> None:
    assert _bash("wc -l src/*.py", project, mode="bypassPermissions").behavior == "allow"
    (project / "src" / ".env").write_text("TOKEN=1")
    assert _bash("cat src/.e*", project, mode="bypassPermissions").behavior == "deny"


def test_paths_resolve_where_the_shell_is(project: Path) -> None:
    src = project / "src"
    for mode in ("default", "bypassPermissions", "acceptEdits"):
        carried = _bash("cat ../secrets/key.txt", project, shell_cwd=src, mode=mode)
        assert carried.behavior == "deny", (mode, carried)
        same_line = _bash("cd src && cat ../secrets/key.txt", project, mode=mode)
        assert same_line.behavior == "deny", (mode, same_line)
    assert _bash("cd src; cd pkg; cat ../../secrets/key.txt", project).behavior == "deny"
    assert _bash("pushd src && cat ../secrets/key.txt", project).behavior == "deny"


def test_a_cd_to_an_unknown_place_makes_later_paths_unknown(project: Path) -> None:
    for command in ("cd $HOME/.. && cat project/secrets/key.txt", "cd - && cat key.txt"):
        assert _bash(command, project, mode="bypassPermissions").behavior == "deny", command
        assert _bash(command, project).behavior == "ask", command


def test_inside_means_the_session_roots_not_where_the_shell_wandered(project: Path) -> None:
    outside = project.parent / "elsewhere"
    outside.mkdir()
    assert _bash("ls", project, shell_cwd=outside).behavior == "ask"
    assert _bash("cat notes.txt", project, shell_cwd=outside).behavior == "ask"
    assert _bash(f"cd {outside} && ls", project).behavior == "ask"
    assert _bash("cd src && ls", project).behavior == "allow"
    assert _bash("ls", project, shell_cwd=project / "src").behavior == "allow"


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        (WRITE, {"file_path": ".toolhost/settings.json", "content": '{"permissions": {}}'}),
        (WRITE, {"file_path": ".toolhost/settings.local.json", "content": "{}"}),
        (EDIT, {"file_path": ".git/config"}),
        (WRITE, {"file_path": "src/../.git/hooks/pre-commit"}),
        (SHELL, {"command": "echo '{}' > .toolhost/settings.local.json"}),
        (SHELL, {"command": "cp evil.json .toolhost/settings.json"}),
        (SHELL, {"command": "mv evil.json .toolhost/settings.local.json"}),
        (SHELL, {"command": "tee .git/hooks/pre-commit < hook.sh"}),
        (SHELL, {"command": "sed -i s/a/b/ .git/config"}),
        (SHELL, {"command": "cd .toolhost && echo x > settings.local.json"}),
        (SHELL, {"command": "ln -sf ../evil.json .toolhost/settings.json"}),
        (SHELL, {"command": "chmod +x .git/hooks/*"}),
    ],
)
def test_a_write_into_a_protected_folder_asks_in_every_mode(
    tool: Tool[Any], raw: dict[str, Any], project: Path
) -> None:
    broad = {"allow": ["Edit(**)", "Write", "Bash(echo:*)", "Bash(cp:*)", "Bash(sed:*)"]}
    for mode in ("default", "acceptEdits", "auto", "bypassPermissions"):
        result = _decide(tool, raw, project, mode=mode, rules=broad)
        assert result.behavior == "ask", (raw, mode, result)
        assert result.reason is not None and result.reason.kind == "safety"
    assert _decide(tool, raw, project, mode="dontAsk", rules=broad).behavior == "deny"


def test_reading_a_protected_folder_and_git_itself_are_not_guarded(project: Path) -> None:
    assert _decide(READ, {"file_path": ".toolhost/settings.json"}, project).behavior == "allow"
    assert _bash("cat .git/HEAD", project).behavior == "allow"
    assert _bash("git status", project).behavior == "allow"
    assert _bash("git commit -m 'a message'", project).behavior == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "$(echo rm) -rf src",
        "`echo rm` -rf src",
        "x=rm; $x -rf src",
        "eval rm -rf src",
        "sh -c 'rm -rf src'",
        "python3 -c 'import shutil; shutil.rmtree(\"src\")'",
        "find src -delete",
        "cat $(ls secrets)",
        "find . -type f | xargs cat",
        "echo x > $TARGET",
    ],
)
def test_a_command_that_cannot_be_checked_is_never_allowed_by_a_mode(
    command: str, project: Path
) -> None:
    assert _bash(command, project, mode="bypassPermissions").behavior == "deny", command
    assert _bash(command, project, mode="dontAsk").behavior == "deny", command
    for mode in ("default", "acceptEdits", "auto"):
        result = _bash(command, project, mode=mode)
        assert result.behavior in ("ask", "deny"), (command, mode, result)
        assert result.reason is not None and result.reason.kind in ("safety", "rule")


def test_without_deny_rules_bypass_mode_still_means_bypass(project: Path) -> None:
    result = _bash("$(echo ls) src", project, mode="bypassPermissions", rules={})
    assert result.behavior == "allow"


def test_an_exact_rule_may_allow_a_command_that_runs_code(project: Path) -> None:
    rules = {**RULES, "allow": ["Bash(python3 -c 'print(1)')"]}
    assert _bash("python3 -c 'print(1)'", project, rules=rules).behavior == "allow"
    assert _bash("python3 -c 'print(2)'", project, rules=rules).behavior == "ask"


READ_ONLY = [
    "sleep 0.1",
    "sort src/a.py | uniq -c",
    "sed -n 1,5p src/a.py",
    "sed 's/TODO/DONE/g' src/a.py",
    "awk '{print $1}' src/a.py",
    "jq .name docs/guide.md",
    "git log --oneline -5",
    "git show HEAD --stat",
    "git branch -a",
    "git config --get user.name",
    "wc -l src/a.py",
    "base64 src/a.py",
    "find src -name '*.py' -print",
    "diff src/a.py docs/guide.md",
    "stat src/a.py",
]
NOT_READ_ONLY = [
    "sed -i s/a/b/ src/a.py",
    "sed 's/a/b/w out.txt' src/a.py",
    "sed -n '1e rm x' src/a.py",
    "sort -o src/a.py src/a.py",
    "awk '{system(\"touch x\")}' src/a.py",
    "awk '{print > \"out\"}' src/a.py",
    "uniq src/a.py out.txt",
    "find src -fprint out.txt",
    "git branch new-branch",
    "git stash",
    "git -c core.pager=touch log",
    "git config user.name x",
    "xxd src/a.py out.bin",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_readers_run_unasked(command: str, project: Path) -> None:
    result = _bash(command, project)
    assert result.behavior == "allow", (command, result)


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_their_writing_options_ask(command: str, project: Path) -> None:
    assert _bash(command, project).behavior == "ask", command
