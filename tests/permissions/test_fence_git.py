"""git is read, never obeyed, through a real Session: the permission engine deciding a git
command, EnterWorktree making and removing a worktree, and Bash commands (sandboxed and
not) that try to leave state behind for git to follow.

Sessions run on the loopback Messages API with the real `anthropic` client, real settings
files, real git repositories in temporary folders and real bubblewrap. The modes are those
in which Bash runs unasked: acceptEdits, auto and bypassPermissions, and default (and
dontAsk, for the engine's own attack) with allow rules. Every planted program only writes
files in the test's own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from session_support import ScriptedApprover, last_results, result_text
from test_bash_sandbox import bwrap, home

from jupyter_toolhost import Session
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, worktree
from jupyter_toolhost.tools.bash import sandbox

__all__ = ["bwrap", "home"]  # fixtures, used by name

SECRET = "SECRET-git-7c21"
UNASKED = ("default", "acceptEdits", "auto", "bypassPermissions")
PLANT = "python3 plant.py"
PLANT_LATER = "python3 plant.py && sleep 2"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout.decode()


def users_git(cwd: Path, home: Path, *args: str) -> None:
    """git as the person runs it next, with their configuration in force."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, env=env)


def project(root: Path, allow: list[str]) -> Path:
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text(SECRET)
    (root / "data").mkdir()
    (root / "data" / "a.txt").write_text("a")
    (root / ".gitignore").write_text(".toolhost/\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "one")
    settings = {"permissions": {"deny": ["Read(./secrets/**)"], "allow": allow}}
    (root / ".toolhost").mkdir()
    (root / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    return root


PLANT_SCRIPT = """\
import os, pathlib
root = pathlib.Path.cwd()
git = root / ".git"
leak, marker = root / "data" / "leak.txt", root / "data" / "ran"
evil = root / "data" / "evil"
(evil / "objects" / "info").mkdir(parents=True, exist_ok=True)
(evil / "refs" / "heads").mkdir(parents=True, exist_ok=True)
(evil / "refs" / "heads" / "main").write_text("12" * 20 + "\\n")
(evil / "HEAD").write_text("ref: refs/heads/main\\n")
(evil / "config").write_text(
    "[core]\\n\\trepositoryformatversion = 1\\n[extensions]\\n\\tpartialclone = origin\\n"
    f'[remote "origin"]\\n\\turl = {evil}\\n\\tpromisor = true\\n'
    f"\\tuploadpack = cat {root}/secrets/key.txt > {leak}; false\\n"
    f"[core]\\n\\tfsmonitor = touch {marker}; false\\n"
)
tried = {
    git / "commondir": f"{evil}\\n",
    git / "config.worktree": f"[core]\\n\\tfsmonitor = touch {marker}; false\\n",
    git / "objects" / "info" / "alternates": f"{evil}/objects\\n",
    git / "hooks" / "post-checkout": f"#!/bin/sh\\ntouch {marker}\\n",
    pathlib.Path.home() / ".gitconfig": f"[core]\\n\\tfsmonitor = touch {marker}; false\\n",
}
for path, body in tried.items():
    try:
        path.write_text(body)
        print("planted", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
"""


def plant_script(root: Path) -> None:
    """What a hostile repository ships, or what the agent wrote earlier."""
    (root / "plant.py").write_text(PLANT_SCRIPT)


async def run_steps(
    root: Path,
    mode: str,
    steps: list[Turn | Callable[[], Turn]],
    *,
    tools: list[Any],
    approver: ScriptedApprover,
) -> list[str]:
    """One scripted turn per step (a step may be made when its request comes), then an end;
    returns each call's result text."""
    queue = [*steps, Turn([text("done")])]

    def respond(body: dict[str, Any]) -> Turn:
        step = queue.pop(0)
        return step if isinstance(step, Turn) else step()

    with MessagesServer(respond) as server:
        session = Session(
            tools=tools,
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id="claude-sonnet-4-5",
            cwd=root,
            permission_mode=mode,  # type: ignore[arg-type]
            approver=approver,
            retry_backoff_s=0.01,
            trust_folder=True,  # the folder's settings (its allow rules) are the test's own
        )
        await session.run("go")
        bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
    return ["\n".join(result_text(b) for b in last_results(body)) for body in bodies[1:]]


def once_exists(path: Path, *, timeout: float = 20.0) -> Callable[[], Turn]:
    """A step that waits for `path` to appear before the model asks for the next call."""

    def wait() -> Turn:
        deadline = time.monotonic() + timeout
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.exists(), f"{path} never appeared"
        return Turn([tool_use("Bash", {"command": "git log -p"})])

    return wait


def gone(path: Path, *, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not path.exists()


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("mode", [*UNASKED, "dontAsk"])
async def test_planted_commondir_is_not_followed_while_deciding(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
    sandboxed: bool,
) -> None:  # fmt: skip
    """The issue's attack. A command allowed to run plants `.git/commondir` pointing at a
    partial clone whose `uploadpack` copies the secret out; the engine's own git, deciding
    a later `git log -p`, must not fetch through it. The foreground plant is swept when its
    command ends; the background one is still there when the engine decides, and the engine
    refuses to read the repository (asks; bypassPermissions denies), naming the file."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1" if sandboxed else "0")
    root = project(tmp_path / "p", allow=[f"Bash({PLANT})", f"Bash({PLANT_LATER})"])
    plant_script(root)
    commondir = root / ".git" / "commondir"
    approver = ScriptedApprover(ApprovalDecision("allow"))
    results = await run_steps(
        root,
        mode,
        [
            Turn([tool_use("Bash", {"command": PLANT})]),
            Turn([tool_use("Bash", {"command": PLANT_LATER, "run_in_background": True})]),
            once_exists(commondir),
        ],
        tools=[bash.make_tool()],
        approver=approver,
    )
    planted, started, decided = results
    leak = root / "data" / "leak.txt"
    assert not leak.exists()
    assert all(SECRET not in r for r in results)
    assert f"removed {commondir}" in planted  # the foreground plant, swept at once
    if mode in ("bypassPermissions", "dontAsk"):
        assert approver.asked == [] and "commondir" in decided and SECRET not in decided
    else:  # asked, even with an allow answer the person sees why
        assert [r.tool_name for r in approver.asked] == ["Bash"]
        assert "commondir" in approver.asked[0].message
    assert gone(commondir)  # the background command is swept when it ends, and says so
    output = Path(started.split("goes to: ")[1].splitlines()[0])
    deadline = time.monotonic() + 10
    while f"removed {commondir}" not in output.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"removed {commondir}" in output.read_text()
    users_git(root, home, "status")
    users_git(root, home, "log", "--all", "-p")
    assert not leak.exists()
    if sandboxed:
        assert "refused" in planted and "alternates" in planted
        assert not (root / ".git" / "objects" / "info" / "alternates").exists()
        assert not (root / ".git" / "hooks" / "post-checkout").exists()
        assert not (home / ".gitconfig").exists()
        assert not (root / "data" / "ran").exists()


@pytest.mark.parametrize("mode", UNASKED)
async def test_a_planted_config_worktree_is_swept_in_the_sandbox(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A repository that already reads `config.worktree` (as `git sparse-checkout` sets
    up): a sandboxed program creates one with an fsmonitor, for the person's next `git
    status`. It is removed when the command ends."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    root = project(tmp_path / "p", allow=["Bash(python3 plant.py)"])
    git(root, "config", "extensions.worktreeConfig", "true")
    marker = root / "data" / "ran"
    (root / "plant.py").write_text(
        "import pathlib\n"
        "pathlib.Path('.git/config.worktree').write_text("
        f"'[core]\\n\\tfsmonitor = touch {marker}; false\\n')\n"
        "print('planted')\n"
    )
    results = await run_steps(
        root,
        mode,
        [Turn([tool_use("Bash", {"command": "python3 plant.py"})])],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(),
    )
    assert "planted" in results[0] and "config.worktree" in results[0]
    assert not (root / ".git" / "config.worktree").exists()
    users_git(root, home, "status")
    assert not marker.exists()


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("shape", ["gitdir file", "nested .git"])
async def test_a_planted_repository_in_a_sub_folder_is_not_followed(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, shape: str,
    sandboxed: bool,
) -> None:  # fmt: skip
    """A `.git` in a sub-folder, a `gitdir:` file or a whole folder, leads to a partial clone
    whose uploadpack copies the secret out; `cd sub && git log -p` makes the engine look
    there."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1" if sandboxed else "0")
    root = project(tmp_path / "p", allow=["Bash(python3 plant.py)"])
    plant_script(root)
    leak = root / "data" / "leak.txt"
    evil = root / "data" / "evil"
    if shape == "gitdir file":
        tail = f"(root / 'sub').mkdir(); (root / 'sub' / '.git').write_text('gitdir: {evil}')\n"
    else:
        tail = "(root / 'sub').mkdir(); evil.rename(root / 'sub' / '.git')\n"
    (root / "plant.py").write_text(PLANT_SCRIPT.split("tried = {")[0] + tail)
    results = await run_steps(
        root,
        "bypassPermissions",
        [
            Turn([tool_use("Bash", {"command": "python3 plant.py"})]),
            Turn([tool_use("Bash", {"command": "cd sub && git log -p"})]),
        ],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(),
    )
    assert (root / "sub" / ".git").exists()
    assert not leak.exists()
    assert "partialclone" in results[1] and SECRET not in results[1]


async def test_git_add_and_commit_still_work_in_the_sandbox(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    root = project(tmp_path / "p", allow=[])
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.invalid")
    command = (
        "git checkout -q -b feature && echo b > data/b.txt && git add data/b.txt && "
        "git commit -qm two && echo c > data/b.txt && git add data/b.txt && "
        "git commit -qm three && git log --oneline | wc -l"
    )
    results = await run_steps(
        root,
        "bypassPermissions",
        [Turn([tool_use("Bash", {"command": command})])],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(),
    )
    assert results[0].strip() == "3", results[0]
    assert git(root, "branch", "--show-current").strip() == "feature"


async def test_the_sandbox_keeps_included_files_and_config_read_only(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `[include]` the user's config already has: the included file (which may lie in the
    working tree) is read-only; a missing one that a command creates is removed."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    root = project(tmp_path / "p", allow=[])
    (root / "team.gitconfig").write_text("[user]\n\tname = team\n")
    with open(root / ".git" / "config", "a") as handle:
        handle.write("[include]\n\tpath = ../team.gitconfig\n\tpath = ../later.gitconfig\n")
    marker = root / "data" / "ran"
    evil = f"[core]\\n\\tfsmonitor = touch {marker}; false\\n"
    command = (
        f"printf '{evil}' >> team.gitconfig; printf '{evil}' > later.gitconfig; "
        f"printf '{evil}' >> .git/config; ls later.gitconfig"
    )
    results = await run_steps(
        root,
        "bypassPermissions",
        [Turn([tool_use("Bash", {"command": command})])],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(ApprovalDecision("allow")),
    )
    assert "Read-only file system" in results[0]
    assert f"removed {root}/later.gitconfig" in results[0]
    assert "fsmonitor" not in (root / "team.gitconfig").read_text()
    assert "fsmonitor" not in (root / ".git" / "config").read_text()
    users_git(root, home, "status")
    assert not marker.exists()


async def test_the_sandbox_keeps_submodules_read_only(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's `git status` looks into each submodule with the submodule's own config
    (`.git/modules/NAME/config`) found through the `.git` file in its working tree: both
    are read-only in the sandbox."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    source = tmp_path / "lib"
    source.mkdir()
    git(source, "init", "-q")
    git(source, "commit", "-q", "--allow-empty", "-m", "lib")
    root = project(tmp_path / "p", allow=[])
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    git(root, "commit", "-qm", "lib")
    marker = root / "data" / "ran"
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", str(evil))
    (evil / ".git" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}; false\n")
    users_git(root, home, "status")
    assert not marker.exists()
    command = (
        f"git -C lib config core.fsmonitor 'touch {marker}; false'; "
        f"echo 'gitdir: {evil}/.git' > lib/.git; "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> .git/modules/lib/config; "
        f"echo '#!/bin/sh' > .git/modules/lib/hooks/post-checkout; echo done"
    )
    results = await run_steps(
        root,
        "bypassPermissions",
        [Turn([tool_use("Bash", {"command": command})])],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(ApprovalDecision("allow")),
    )
    assert "done" in results[0] and "Read-only file system" in results[0], results[0]
    users_git(root, home, "status")
    assert not marker.exists()
    assert "fsmonitor" not in (root / ".git" / "modules" / "lib" / "config").read_text()


async def test_the_sandbox_keeps_worktree_pointers_and_system_config_read_only(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A linked worktree's `.git` file (in `.toolhost/worktrees/`, which stays writable) and
    `/etc/gitconfig` (writable by root) can't be changed from the sandbox. `touch -c` only
    tries to change a time, so the machine's own file is not at risk."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
    root = project(tmp_path / "p", allow=[])
    side = root / ".toolhost" / "worktrees" / "side"
    git(root, "worktree", "add", "-q", "-b", "side", str(side))
    pointer = (side / ".git").read_text()
    command = f"echo 'gitdir: {tmp_path}/evil' > {side}/.git; touch -c /etc/gitconfig; echo done"
    results = await run_steps(
        root,
        "bypassPermissions",
        [Turn([tool_use("Bash", {"command": command})])],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(ApprovalDecision("allow")),
    )
    assert "done" in results[0]
    assert f"{side}/.git: Read-only file system" in results[0]
    if os.path.exists("/etc/gitconfig"):
        assert "'/etc/gitconfig': Read-only file system" in results[0]
    assert (side / ".git").read_text() == pointer


# ── EnterWorktree ───────────────────────────────────────────────────────────────────────


def hostile_checkout(root: Path, marker: Path) -> None:
    """A post-checkout hook, a smudge filter on every file and an fsmonitor: what `git
    worktree add` and `git status` would run."""
    hook = root / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}-hook\n")
    hook.chmod(0o755)
    (root / ".gitattributes").write_text("* filter=evil\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attrs")
    git(root, "config", "filter.evil.smudge", f"touch {marker}-smudge; cat")
    git(root, "config", "filter.evil.clean", f"touch {marker}-clean; cat")
    git(root, "config", "core.fsmonitor", f"touch {marker}-fsmonitor; false")


@pytest.mark.parametrize("mode", UNASKED)
async def test_enter_worktree_runs_no_repository_code(
    bwrap: None, tmp_path: Path, home: Path, mode: str
) -> None:
    root = project(tmp_path / "p", allow=["EnterWorktree", "ExitWorktree"]).resolve()
    marker = tmp_path / "ran"
    hostile_checkout(root, marker)
    # git as a person runs it runs all three
    git(root, "worktree", "add", "-q", "-b", "probe", str(tmp_path / "probe"))
    users_git(tmp_path / "probe", home, "status")
    ran = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran"))
    assert ran == ["ran-clean", "ran-fsmonitor", "ran-hook", "ran-smudge"]
    for name in ran:
        (tmp_path / name).unlink()

    def change_then_exit() -> Turn:
        with open(root / ".toolhost" / "worktrees" / "side" / "data" / "a.txt", "a") as handle:
            handle.write("more")  # what the agent did in the worktree
        return Turn([tool_use("ExitWorktree", {"action": "remove"})])

    results = await run_steps(
        root,
        mode,
        [Turn([tool_use("EnterWorktree", {"name": "side"})]), change_then_exit],
        tools=worktree.make_tools(),
        approver=ScriptedApprover(*[ApprovalDecision("allow")] * 2),
    )
    assert "Created worktree" in results[0]
    assert "uncommitted changes" in results[1]  # git status ran, closed
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == []


@pytest.mark.parametrize(
    "planted", ["commondir", "config.worktree", "include", "alternates", "filter.x=y"]
)  # fmt: skip
async def test_enter_worktree_refuses_a_repository_with_planted_state(
    tmp_path: Path, home: Path, planted: str
) -> None:
    root = project(tmp_path / "p", allow=["EnterWorktree"]).resolve()
    marker = tmp_path / "ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "post-checkout").chmod(0o755)
    evil = tmp_path / "evil.cfg"
    evil.write_text(f"[core]\n\thooksPath = {hooks}\n")
    dot = root / ".git"
    if planted == "commondir":
        other = tmp_path / "other"
        git(tmp_path, "init", "-q", "--bare", str(other))
        (other / "config").write_text(evil.read_text())
        (dot / "commondir").write_text(f"{other}\n")
    elif planted == "config.worktree":
        git(root, "config", "extensions.worktreeConfig", "true")
        (dot / "config.worktree").write_text(evil.read_text())
    elif planted == "include":
        with open(dot / "config", "a") as handle:
            handle.write(f"[include]\n\tpath = {evil}\n")
    elif planted == "filter.x=y":
        (root / ".gitattributes").write_text("* filter=x=y\n")
        git(root, "add", ".gitattributes")
        git(root, "commit", "-qm", "attrs")
        with open(dot / "config", "a") as handle:
            handle.write(f'[filter "x=y"]\n\tsmudge = touch {marker}; cat\n')
    else:
        (dot / "objects" / "info" / "alternates").write_text(f"{tmp_path}/objects\n")
    results = await run_steps(
        root,
        "bypassPermissions",
        [Turn([tool_use("EnterWorktree", {"name": "side"})])],
        tools=worktree.make_tools(),
        approver=ScriptedApprover(),
    )
    assert "git is not run in" in results[0] and planted in results[0]
    assert not marker.exists()
    assert not (root / ".toolhost" / "worktrees" / "side").exists()


# ── the command's own environment ───────────────────────────────────────────────────────


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize(
    "command",
    [
        "GIT_DIR={root}/.git git log -p",
        "export GIT_DIR={root}/.git; git log -p",
        "git --git-dir={root}/.git log -p",
        "git --git-dir {root}/.git log -p",
        "git -C {root} log -p",
        "git -C {root}/data -C .. log -p",
        "env GIT_WORK_TREE={root} GIT_DIR={root}/.git git log -p",
        "cd {root} && git log -p",
        "cd {root}/data; git log -p -- ../secrets",
    ],
    ids=[
        "assignment",
        "export",
        "git-dir=",
        "git-dir",
        "dash-C",
        "two-dash-C",
        "env",
        "cd",
        "cd-pathspec",
    ],
)
async def test_git_pointed_elsewhere_by_the_command_is_not_waved_through(
    bwrap: None, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, command: str,
    sandboxed: bool,
) -> None:  # fmt: skip
    """`GIT_DIR` (or `--git-dir`, `-C`) sends the command's git to the project's history
    from a folder outside any repository (the shell went there first), where the engine
    would find no repository to check: the history, which holds the denied file, is not
    printed unasked."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "1" if sandboxed else "0")
    root = project(tmp_path / "p", allow=[])
    out = tmp_path / "elsewhere"
    out.mkdir()
    results = await run_steps(
        root,
        "bypassPermissions",
        [
            Turn([tool_use("Bash", {"command": f"cd {out}"})]),
            Turn([tool_use("Bash", {"command": command.format(root=root)})]),
        ],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(ApprovalDecision("deny")),
    )
    assert SECRET not in results[1]
    assert "denied" in results[1] or "not run" in results[1]


async def test_the_kernels_git_dir_does_not_reach_commands(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `GIT_DIR` in the kernel's environment would send every command's git to that
    repository while the engine checks the one around the command's folder."""
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "0")
    root = project(tmp_path / "p", allow=[])
    out = tmp_path / "elsewhere"
    out.mkdir()
    monkeypatch.setenv("GIT_DIR", f"{root}/.git")
    results = await run_steps(
        root,
        "bypassPermissions",
        [
            Turn([tool_use("Bash", {"command": f"cd {out}"})]),
            Turn([tool_use("Bash", {"command": "git log -p | head -3; echo listed"})]),
        ],
        tools=[bash.make_tool()],
        approver=ScriptedApprover(),
    )
    assert "listed" in results[1] and "commit" not in results[1]
    assert SECRET not in results[1]
