"""The permission engine's side of the fence: deciding never runs the repository's or the
user's git configuration, and PythonExec (code in the kernel's own process, which no path
rule reaches) answers to the deny rules in every mode.

Sessions run on the loopback Messages API with the real `anthropic` client, the real engine
built from real settings files, a real IPython shell for PythonExec and real bubblewrap.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from session_support import ScriptedApprover, last_results, result_text
from test_bash_sandbox import bwrap, home

from jupyter_toolhost import Session
from jupyter_toolhost.jupyter.kernel.kernel_tools import kernel_tools
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.permissions.paths import git_paths
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, read
from jupyter_toolhost.tools.bash import sandbox

__all__ = ["bwrap", "home"]  # fixtures, used by name

SECRET = "SECRET-fence-5d1e"
MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")
DENY = {"permissions": {"deny": ["Read(./secrets/**)", "Edit(./protected/**)"]}}


def project(root: Path, settings: dict[str, Any] | None = DENY) -> Path:
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text(SECRET)
    (root / "protected").mkdir()
    (root / "protected" / "a.txt").write_text("original")
    (root / "data").mkdir()
    if settings is not None:
        import json

        (root / ".toolhost").mkdir()
        (root / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    return root


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )


# ── hostile git configuration ───────────────────────────────────────────────────────────


def plain_git(cwd: Path, *args: str) -> None:
    """git as a person runs it, with every configuration in force."""
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def hostile_repo(root: Path) -> Path:
    project(root)
    git(root, "init", "-q")
    git(root, "add", "secrets", "data", "protected")
    git(root, "commit", "-qm", "one")
    return root


async def test_hostile_repository_config_does_not_run_while_deciding(
    tmp_path: Path, home: Path
) -> None:
    root = hostile_repo(tmp_path / "p")
    leak = root / "data" / "leak.txt"
    hook = f"cat {root}/secrets/key.txt > {leak}; false"
    git(root, "config", "core.fsmonitor", hook)
    git(root, "config", "core.hooksPath", str(root / "hooks"))
    git(root, "config", "log.showSignature", "true")
    git(root, "config", "gpg.program", f"sh -c 'touch {root}/data/gpg-ran'")
    git(root, "config", "diff.external", f"sh -c 'touch {root}/data/diff-ran'")
    # The plain git the engine used to run does start the fsmonitor here:
    plain_git(root, "ls-files", "--others")
    assert leak.read_text() == SECRET
    leak.unlink()
    result = await run_session(
        root, "bypassPermissions", [tool_use("Bash", {"command": "git log -p -1"})]
    )
    assert SECRET not in result and "denies" in result  # the guard refused the command
    assert not leak.exists()
    assert sorted(p.name for p in (root / "data").iterdir()) == []
    assert f"{root}/secrets/key.txt" in (git_paths(str(root)) or ())


async def test_hostile_user_gitconfig_does_not_run_while_deciding(
    tmp_path: Path, home: Path
) -> None:
    root = hostile_repo(tmp_path / "p")
    marker = home / "ran"
    (home / ".gitconfig").write_text(
        f"[core]\n\tfsmonitor = touch {marker}\n\tpager = touch {marker}\n"
        f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = touch {marker}\n"
    )
    (root / "data" / "new.txt").write_text("untracked")  # ls-files --others has work to do
    plain_git(root, "ls-files", "--others")
    assert marker.exists()  # plain git honours it
    marker.unlink()
    result = await run_session(root, "default", [tool_use("Bash", {"command": "git log -1"})])
    assert SECRET not in result
    assert not marker.exists()


# ── PythonExec under the rules ─────────────────────────────────────────────────────────


@pytest.fixture
def shell() -> Any:
    return InteractiveShell.instance()


async def run_session(
    root: Path,
    mode: str,
    calls: list[Any],
    *,
    tools: list[Any] | None = None,
    approver: ScriptedApprover | None = None,
) -> str:
    """Run one scripted turn per call, then an end; returns every result's text joined."""
    turns = [Turn([call]) for call in calls] + [Turn([text("done")])]
    with MessagesServer(turns) as server:
        session = Session(
            tools=tools or [bash.make_tool(), read.TOOL],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id="claude-sonnet-4-5",
            cwd=root,
            trust_folder=True,  # the folder's settings are the test's own
            permission_mode=mode,  # type: ignore[arg-type]
            approver=approver or ScriptedApprover(*[ApprovalDecision("deny")] * len(calls)),
            retry_backoff_s=0.01,
        )
        await session.run("go")
        bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
    return "\n".join(result_text(b) for body in bodies[1:] for b in last_results(body))


STEAL = (
    "import os, pathlib\n"
    "print(pathlib.Path('secrets/key.txt').read_text())\n"
    "pathlib.Path('protected/a.txt').write_text('changed')\n"
)


@pytest.mark.parametrize("mode", MODES)
async def test_python_exec_answers_to_the_denies(
    tmp_path: Path, home: Path, shell: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p")
    approver = ScriptedApprover(ApprovalDecision("deny"))
    monkeypatch.chdir(root)  # the kernel's folder is the project, as in a notebook
    result = await run_session(
        root,
        mode,
        [tool_use("PythonExec", {"code": STEAL})],
        tools=kernel_tools(shell),
        approver=approver,
    )
    assert SECRET not in result
    assert (root / "protected" / "a.txt").read_text() == "original"
    if mode in ("dontAsk", "plan"):
        assert approver.asked == [] and "was not run" in result
    else:  # asked, bypassPermissions and auto included, and the answer was Deny
        assert [r.tool_name for r in approver.asked] == ["PythonExec"]
        assert "deny rules" in approver.asked[0].message


@pytest.mark.parametrize(
    ("mode", "asked"),
    [("default", True), ("acceptEdits", True), ("bypassPermissions", True), ("auto", True),
     ("plan", False), ("dontAsk", False)],
)  # fmt: skip
async def test_python_exec_without_denies(
    tmp_path: Path, home: Path, shell: Any, mode: str, asked: bool
) -> None:
    """Without Read or Edit denies the usual modes decide, but bypassPermissions and auto
    still ask: the code can rewrite the protected folders (.toolhost/, .git/)."""
    root = project(tmp_path / "p", settings=None)
    approver = ScriptedApprover(ApprovalDecision("allow"))
    result = await run_session(
        root,
        mode,
        [tool_use("PythonExec", {"code": "print(6 * 7)"})],
        tools=kernel_tools(shell),
        approver=approver,
    )
    assert bool(approver.asked) == asked
    assert ("42" in result) == asked


async def test_python_exec_cannot_turn_the_sandbox_off(
    bwrap: None, tmp_path: Path, home: Path, shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Approved code sets the sandbox's variable (os.environ, %env, a `!` line): later Bash
    calls of the session stay sandboxed."""
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    root = project(tmp_path / "p")
    code = (
        f"import os\nos.environ[{sandbox.SANDBOX_ENV!r}] = '0'\n"
        f"get_ipython().run_line_magic('env', '{sandbox.SANDBOX_ENV}=0')\n"
        f"!export {sandbox.SANDBOX_ENV}=0\n"
        f"os.environ[{sandbox.NETWORK_ENV!r}] = '1'\n"
    )
    approver = ScriptedApprover(ApprovalDecision("allow"))
    try:
        result = await run_session(
            root,
            "bypassPermissions",
            [
                tool_use("PythonExec", {"code": code}),
                tool_use("Bash", {"command": "cat secrets/key.txt; echo x > protected/a.txt"}),
            ],
            tools=[*kernel_tools(shell), bash.make_tool()],
            approver=approver,
        )
        assert os.environ[sandbox.SANDBOX_ENV] == "0"  # the code did run
    finally:
        os.environ.pop(sandbox.SANDBOX_ENV, None)
        os.environ.pop(sandbox.NETWORK_ENV, None)
    assert SECRET not in result
    assert (root / "protected" / "a.txt").read_text() == "original"
