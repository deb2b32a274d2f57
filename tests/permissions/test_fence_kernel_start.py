"""The kernel's own start-up is protected: what the next kernel or IPython start would run
can't be written unasked, and in the sandbox can't be written at all.

Real sessions on the loopback Messages API with the real tools and real bubblewrap; the end
to end tests start real kernels through jupyter_client, one to be attacked and a new one in
the same folder to see whether the planted code runs. (The attack corpus holds the same
attacks by spelling, in every mode, sandbox on and off: `permission_cases/attacks.json`,
class "kernel-start".)
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from kernel_helpers import Kernel, agent_kernel
from session_support import ScriptedApprover
from test_bash_sandbox import bwrap, home
from test_fence_rules import MODES, run_session

from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.permissions.startup import kernel_start_modules, startup_places
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, edit, read, write

__all__ = ["bwrap", "home"]  # fixtures, used by name


def _payload(marker: Path) -> str:
    """A launcher that leaves a trace, then starts the real kernel (so the start succeeds)."""
    return (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('planted code ran')\n"
        "if __name__ == '__main__':\n"
        "    from ipykernel import kernelapp\n"
        "    kernelapp.launch_new_instance()\n"
    )


def _tools() -> list[object]:
    return [write.TOOL, edit.TOOL, read.TOOL, bash.make_tool()]


def _sandbox(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    problem = bash.sandbox.bwrap_problem()[1]
    if on and problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs bubblewrap for the sandbox tests: {problem}")
        pytest.skip(f"no usable bubblewrap here: {problem}")
    monkeypatch.setenv(bash.sandbox.SANDBOX_ENV, "1" if on else "0")


# ── the derivation ──────────────────────────────────────────────────────────────────────


def test_the_start_modules_are_derived_from_a_real_kernel_start() -> None:
    names = kernel_start_modules()
    # What ipykernel imports before any user code, found by starting its application:
    for name in ("ipykernel", "ipython", "traitlets", "jupyter_client", "zmq", "tornado"):
        assert name in names, name
    for name in ("comm", "debugpy", "asyncio", "json"):  # imported later in the start
        assert name in names, name
    for name in ("ipykernel_launcher", "sitecustomize", "usercustomize", "jupyter_toolhost"):
        assert name in names, name
    # Everyday names in a notebook's folder are not among them.
    for name in ("analysis", "notes", "tests", "test", "data", "src", "utils", "main"):
        assert name not in names, name


def test_the_places_follow_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipy"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jcfg"))
    places = startup_places(str(tmp_path / "home"), [str(tmp_path / "work")])
    for folder in ("ipy", "jcfg", "home/.ipython", "home/.jupyter"):
        assert str(tmp_path / folder) in places.folders, folder
    assert str(tmp_path / "home/.local/share/jupyter/kernels") in places.folders
    assert str(tmp_path / "work") in places.module_dirs
    assert os.getcwd() in places.module_dirs  # the kernel's own folder


# ── file tools and Bash, every mode ─────────────────────────────────────────────────────


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
async def test_a_path_through_a_symlinked_folder_is_protected(
    tmp_path: Path, home: Path, mode: str, sandboxed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notebook's folder reached through a link, with ``cd`` first, or a relative path."""
    _sandbox(monkeypatch, sandboxed)
    root = tmp_path / "nb"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "nb-link").symlink_to(root)
    (home / ".ipython" / "profile_default" / "startup").mkdir(parents=True)
    (root / "startup-link").symlink_to(home / ".ipython" / "profile_default" / "startup")
    marker = tmp_path / "ran.txt"
    body = _payload(marker)
    calls = [
        tool_use("Write", {"file_path": f"{tmp_path}/elsewhere/nb-link/ipykernel_launcher.py",
                           "content": body}),
        tool_use("Bash", {"command": f"cd {tmp_path}/elsewhere/nb-link && echo x > zmq.py"}),
        tool_use("Bash", {"command": "cd startup-link && echo 'print(1)' > 00.py"}),
        tool_use("Write", {"file_path": "startup-link/01.py", "content": "print(1)\n"}),
        tool_use("Bash", {"command": "cp /dev/null ../nb/sitecustomize.py"}),
    ]  # fmt: skip
    await run_session(
        root,
        mode,
        calls,
        tools=_tools(),
        approver=ScriptedApprover(*[ApprovalDecision("deny")] * len(calls)),
    )
    assert sorted(p.name for p in root.iterdir()) == [".toolhost", "startup-link"]
    assert os.listdir(root / ".toolhost") == ["sessions"]
    assert list((home / ".ipython" / "profile_default" / "startup").iterdir()) == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
async def test_a_tree_copied_over_a_start_up_place_is_protected(
    tmp_path: Path, home: Path, mode: str, sandboxed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder whose tree lands on start-up paths, copied into the home folder or into the
    notebook's folder; a file placed by ``-t DIR`` or a glob; and $PYTHONSTARTUP and a lab
    extension named by their paths."""
    _sandbox(monkeypatch, sandboxed)
    monkeypatch.setenv("PYTHONSTARTUP", str(home / ".pythonrc.py"))
    root = tmp_path / "nb"
    root.mkdir()
    payload = tmp_path / "payload"
    (payload / ".ipython" / "profile_default" / "startup").mkdir(parents=True)
    (payload / ".ipython" / "profile_default" / "startup" / "00.py").write_text("print(1)\n")
    (payload / "ipykernel_launcher.py").write_text("print(1)\n")
    labext = home / ".local/share/jupyter/labextensions/evil/package.json"
    calls = [
        tool_use("Bash", {"command": f"cp -r {payload}/. ~"}),
        tool_use("Bash", {"command": f"rsync -a {payload}/ ~/"}),
        tool_use("Bash", {"command": f"cp -r {payload}/. ."}),
        tool_use("Bash", {"command": f"cp -t . {payload}/ipykernel_launcher.py"}),
        tool_use("Bash", {"command": f"mv --target-directory=. {payload}/ipykernel_launcher.py"}),
        tool_use("Bash", {"command": f"install -t. {payload}/ipykernel_launcher.py"}),
        tool_use("Bash", {"command": f"cp {payload}/* ."}),
        tool_use("Write", {"file_path": str(home / ".pythonrc.py"), "content": "print(1)\n"}),
        tool_use("Write", {"file_path": str(labext), "content": "{}"}),
    ]
    await run_session(
        root,
        mode,
        calls,
        tools=_tools(),
        approver=ScriptedApprover(*[ApprovalDecision("deny")] * len(calls)),
    )
    assert sorted(p.name for p in root.iterdir()) == [".toolhost"]
    assert list(home.rglob("*.py")) == [] and list(home.rglob("ipykernel*")) == []
    assert (payload / "ipykernel_launcher.py").is_file()  # (not moved either)
    assert not labext.exists()


@pytest.mark.parametrize("mode", ["acceptEdits", "auto", "bypassPermissions"])
async def test_everyday_files_are_still_written_unasked(
    tmp_path: Path, home: Path, mode: str
) -> None:
    root = tmp_path / "nb"
    root.mkdir()
    calls = [
        tool_use("Write", {"file_path": "analysis.py", "content": "import json\n"}),
        tool_use("Write", {"file_path": "notes.md", "content": "# notes\n"}),
        tool_use("Write", {"file_path": "tests/test_analysis.py", "content": "def test(): pass\n"}),
        tool_use("Write", {"file_path": "code/helpers.py", "content": "x = 1\n"}),
    ]
    approver = ScriptedApprover()  # nothing may be asked: it would raise on an empty list
    await run_session(root, mode, calls, tools=_tools(), approver=approver)
    if mode == "auto":
        return  # (auto asks the classifier for what acceptEdits allows: no classifier here)
    assert approver.asked == []
    for name in ("analysis.py", "notes.md", "tests/test_analysis.py", "code/helpers.py"):
        assert (root / name).is_file(), name


# ── the sandbox: read-only even when the command was allowed ────────────────────────────


async def test_allowed_commands_cannot_write_start_up_files_in_the_sandbox(
    bwrap: None, tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "nb"
    root.mkdir()
    (root / "sitecustomize.py").write_text("# the user's own\n")
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)  # (as IPython makes it at its first start)
    writes = {
        "startup file": startup / "00-evil.py",
        "new profile": home / ".ipython" / "profile_evil" / "startup" / "a.py",
        "jupyter config": home / ".jupyter" / "jupyter_server_config.py",
        "kernelspec": home / ".local" / "share" / "jupyter" / "kernels" / "evil" / "kernel.json",
        "existing sitecustomize": root / "sitecustomize.py",
    }
    # Each write hidden from the check inside a program, and approved by a person.
    commands = [
        f'{sys.executable} -c "import pathlib as p, sys; t = p.Path(sys.argv[1]); '
        "t.parent.mkdir(parents=True, exist_ok=True); t.write_text('print(1)')\" " + str(path)
        for path in writes.values()
    ]
    calls = [tool_use("Bash", {"command": c}) for c in commands]
    result = await run_session(
        root,
        "bypassPermissions",
        calls,
        tools=_tools(),
        approver=ScriptedApprover(*[ApprovalDecision("allow")] * len(calls)),
    )
    assert result.count("Read-only file system") == len(writes), result
    for what, path in writes.items():
        if what == "existing sitecustomize":
            assert path.read_text() == "# the user's own\n"
        else:
            assert not path.exists(), what
    assert list(startup.iterdir()) == []


def _maker(paths: dict[str, str]) -> str:
    """A command that makes files from a program the check can't see into."""
    code = (
        "import json, pathlib, sys\n"
        "for name, body in json.loads(sys.argv[1]).items():\n"
        "    p = pathlib.Path(name); p.parent.mkdir(parents=True, exist_ok=True)\n"
        "    p.write_text(body)\n"
    )
    return f"{sys.executable} -c {shlex.quote(code)} {shlex.quote(json.dumps(paths))}"


PLANTED = {
    "ipykernel_launcher.py": "print('planted')\n",
    "zmq.py": "print('planted')\n",
    "ipykernel/__init__.py": "print('planted')\n",
    "evil.pth": "import os; print('planted')\n",
}
KEPT = {
    "paths.pth": "/opt/somewhere\n",  # lists a folder: appended to the path, runs nothing
    "code/helpers.py": "x = 1\n",  # a folder with no __init__ shadows no module
    "analysis.py": "import json\n",
}


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_new_start_up_files_a_program_makes_are_moved_aside(
    bwrap: None, tmp_path: Path, home: Path, background: bool
) -> None:
    """A mount covers only what exists: what an approved program creates in the notebook's
    folder is moved into the session's quarantine when the command ends."""
    root = tmp_path / "nb"
    root.mkdir()
    command = {"command": _maker({**PLANTED, **KEPT}), "run_in_background": background}
    result = await run_session(
        root,
        "bypassPermissions",
        [tool_use("Bash", command)],
        tools=_tools(),
        approver=ScriptedApprover(ApprovalDecision("allow")),
    )
    if background:
        deadline = time.monotonic() + 20
        while (root / "ipykernel_launcher.py").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        [output] = list((root / ".toolhost" / "sessions").glob("*/tasks/*.output"))
        for _ in range(100):
            if "moved aside" in output.read_text():
                break
            time.sleep(0.05)
        result = output.read_text()
    assert "moved aside, not run" in result, result
    for name in ("ipykernel_launcher.py", "zmq.py", "ipykernel", "evil.pth"):
        assert not (root / name).exists(), name
        assert f"{root}/{name} -> " in result
    moved = list((root / ".toolhost" / "sessions").glob("*/quarantine/*/*"))
    assert sorted(p.name for p in moved) == sorted(["ipykernel_launcher.py", "zmq.py",
                                                    "ipykernel", "evil.pth"])  # fmt: skip
    for name, body in KEPT.items():
        assert (root / name).read_text() == body, name


# ── end to end: a real kernel, and the next one ─────────────────────────────────────────


def test_a_planted_launcher_runs_at_the_next_kernel_start(tmp_path: Path) -> None:
    """The attack is real: a launcher in the notebook's folder runs when a kernel starts
    there (this is what the tests below must prevent)."""
    marker = tmp_path / "ran.txt"
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "ipykernel_launcher.py").write_text(_payload(marker))
    kernel = Kernel(folder)
    try:
        assert kernel.run("print(1 + 1)").stdout == "2\n"
    finally:
        kernel.close()
    assert marker.read_text() == "planted code ran"


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    folder = tmp_path / "notebook"
    folder.mkdir()
    return folder


def _attack_turns(marker: Path) -> list[Turn]:
    launcher = {"file_path": "ipykernel_launcher.py", "content": _payload(marker)}
    startup = {
        "command": "mkdir -p ~/.ipython/profile_default/startup && "
        f"echo \"open({str(marker)!r}, 'w').write('startup ran')\" "
        "> ~/.ipython/profile_default/startup/00-evil.py"
    }
    return [
        Turn([tool_use("Write", launcher)]),
        Turn([tool_use("Bash", startup)]),
        Turn([text("I could not plant it.")]),
    ]


def _next_kernel_runs_nothing(folder: Path, marker: Path) -> None:
    assert not (folder / "ipykernel_launcher.py").exists()
    assert not (folder / ".ipython" / "profile_default" / "startup" / "00-evil.py").exists()
    kernel = Kernel(folder, {"HOME": str(folder)})
    try:
        assert kernel.run("print(2 + 2)").stdout == "4\n"
    finally:
        kernel.close()
    assert not marker.exists()


def test_bypass_mode_asks_before_planting_a_launcher(notebook: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    with MessagesServer(_attack_turns(marker)) as server:
        kernel = agent_kernel(notebook, server.base_url)
        try:
            run = kernel.submit("%%agent --new --mode bypassPermissions\nMake the kernel faster")
            for count in (1, 2):  # the launcher, then the startup file: each asked, denied
                denies = kernel.wait_for_button(run, "Deny", count=count)
                kernel.click(denies[-1])
            kernel.wait(run, timeout=30)
            assert run.status == "ok", run.text()
            assert "I could not plant it." in run.text()
            assert "Denied Write" in run.stdout and "Denied Bash" in run.stdout, run.stdout
            assert server.errors == []
        finally:
            kernel.close()
    _next_kernel_runs_nothing(notebook, marker)


def test_a_headless_bypass_run_is_denied_at_once(notebook: Path, tmp_path: Path) -> None:
    """nbclient's case: no front end shows the prompt, so the protected write is denied."""
    marker = tmp_path / "ran.txt"
    with MessagesServer(_attack_turns(marker)) as server:
        kernel = agent_kernel(
            notebook,
            server.base_url,
            env={"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""},
            renders_widgets=False,
        )
        try:
            run = kernel.submit("%%agent --new --mode bypassPermissions\nMake the kernel faster")
            kernel.wait(run, timeout=60)
            assert run.status == "ok", run.text()
            assert "Denied Write" in run.stdout, run.stdout
            assert "I could not plant it." in run.text()
            assert server.errors == []
        finally:
            kernel.close()
    _next_kernel_runs_nothing(notebook, marker)
