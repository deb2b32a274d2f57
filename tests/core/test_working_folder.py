"""The working folder and the settings in force are explicit, and right, where a gateway
starts kernels in its own folder.

Kernels here are real (jupyter_client) and started the way a Kernel Gateway starts them: in
a folder of the gateway's, without `JPY_SESSION_NAME`, with the notebook's folder only in
`KERNEL_WORKING_DIR` (tests/jupyter/test_gateway.py runs the gateway itself). The settings file
beside the notebook denies Write: whether a Write is refused shows which settings apply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import agent_kernel

from jupyter_toolhost.core.workdir import ROOT_ENV, resolve_working_folder
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use


def _project(root: Path) -> Path:
    """A notebook's folder whose settings deny Write."""
    project = root / "project"
    (project / ".toolhost").mkdir(parents=True)
    settings = {"permissions": {"deny": ["Write"], "defaultMode": "bypassPermissions"}}
    (project / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    (project / "analysis.ipynb").write_text("{}")
    return project


# ── the order, without a kernel ─────────────────────────────────────────────────────────


def test_the_order_of_the_sources(tmp_path: Path) -> None:
    project = _project(tmp_path)
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    notebook = str(project / "analysis.ipynb")

    local = resolve_working_folder(environ={"JPY_SESSION_NAME": notebook}, cwd=project)
    assert (local.path, local.source, local.is_notebook_folder) == (
        project.resolve(),
        "JPY_SESSION_NAME",
        True,
    )
    assert local.notice([]) is None

    remote = resolve_working_folder(environ={"KERNEL_WORKING_DIR": str(project)}, cwd=gateway)
    assert (remote.path, remote.source) == (project.resolve(), "KERNEL_WORKING_DIR")

    lost = resolve_working_folder(environ={"KERNEL_WORKING_DIR": "/no/such/folder"}, cwd=gateway)
    assert (lost.path, lost.source, lost.notebook_here) == (
        gateway.resolve(),
        "the kernel's folder",
        False,
    )
    notice = lost.notice([])
    assert notice is not None
    assert "/no/such/folder is not on the kernel's machine" in notice
    assert "no settings files apply here" in notice

    env = {"KERNEL_WORKING_DIR": str(project), ROOT_ENV: str(other)}
    assert resolve_working_folder(environ=env, cwd=gateway).source == ROOT_ENV
    configured = resolve_working_folder(configured=str(gateway), environ=env, cwd=gateway)
    assert configured.source == "c.ToolHost.root_dir"
    explicit = resolve_working_folder(explicit="../other", configured=str(gateway), cwd=project)
    assert (explicit.path, explicit.source) == (other.resolve(), "%agent cwd")
    assert "not the notebook's folder" in (configured.notice([]) or "")

    with pytest.raises(ValueError, match="not a folder on the kernel's machine"):
        resolve_working_folder(environ={ROOT_ENV: str(tmp_path / "missing")}, cwd=gateway)

    # Untold (nbclient, a plain jupyter_client kernel): the kernel's folder, and no line.
    plain = resolve_working_folder(environ={}, cwd=gateway)
    assert plain.source == "the kernel's folder" and plain.notice([]) is None


# ── in a real kernel ────────────────────────────────────────────────────────────────────


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as running:
        yield running


def _write_denied(server: MessagesServer) -> bool:
    """The deny rule took effect: a tool denied whole is not offered, and the call fails."""
    body = server.requests[-1].body
    offered = {tool["name"] for tool in body["tools"]}
    result = body["messages"][-1]["content"][0]
    return "Write" not in offered and "Read" in offered and bool(result.get("is_error"))


def _ask_to_write(server: MessagesServer) -> None:
    server.add_turns(
        Turn([tool_use("Write", {"file_path": "out.txt", "content": "x"})]),
        Turn([text("ok")]),
    )


@pytest.mark.timeout(180)
def test_a_gateway_kernel_finds_the_notebooks_folder_and_its_settings(
    tmp_path: Path, server: MessagesServer
) -> None:
    project = _project(tmp_path)
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    kernel = agent_kernel(gateway, server.base_url, env={"KERNEL_WORKING_DIR": str(project)})
    try:
        assert kernel.run("import os; print(os.getcwd())").stdout.strip() == str(project.resolve())
        _ask_to_write(server)
        run = kernel.run("%%agent --trust-folder\nWrite out.txt")  # the test's own settings
        assert run.status == "ok", run.text()
        assert _write_denied(server)
        assert not (project / "out.txt").exists() and not (gateway / "out.txt").exists()
        assert "Working folder" not in run.text()  # it is the notebook's folder: no line
        status = kernel.run("%agent status").text()
        assert str(project.resolve()) in status and "KERNEL_WORKING_DIR" in status
        assert str(project / ".toolhost" / "settings.json") in status
    finally:
        kernel.close()


@pytest.mark.timeout(180)
def test_a_notebook_folder_not_on_the_kernels_machine_is_said_and_cwd_fixes_it(
    tmp_path: Path, server: MessagesServer
) -> None:
    project = _project(tmp_path)
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    elsewhere = "/home/someone/project"
    kernel = agent_kernel(gateway, server.base_url, env={"KERNEL_WORKING_DIR": elsewhere})
    try:
        server.add_turns(Turn([text("hello")]))
        first = kernel.run("%%agent --mode bypassPermissions\nhi")
        assert first.status == "ok", first.text()
        shown = first.text()
        assert f"Working folder {gateway.resolve()} (the kernel's folder;" in shown
        assert f"{elsewhere} is not on the kernel's machine" in shown
        assert "no settings files apply here" in shown and "%agent cwd PATH" in shown
        # The next cell of the same conversation does not repeat it.
        server.add_turns(Turn([text("again")]))
        assert "Working folder" not in kernel.run("%%agent\nagain").text()

        status = kernel.run("%agent status").text()
        assert "not on the kernel's machine" in status and "settings files" in status

        moved = kernel.run(f"%agent cwd {project}")
        assert moved.status == "ok", moved.text()
        assert str(project / ".toolhost" / "settings.json") in moved.text()
        assert "starts anew" in moved.text()
        assert kernel.run("import os; print(os.getcwd())").stdout.strip() == str(project)
        _ask_to_write(server)
        run = kernel.run("%%agent --trust-folder\nWrite out.txt")  # the test's own settings
        assert run.status == "ok", run.text()
        assert _write_denied(server)
        assert "not the notebook's folder" not in run.text() or str(project) in run.text()

        missing = kernel.run("%agent cwd /no/such/place")
        assert missing.status == "error" and "not a folder" in missing.text()
    finally:
        kernel.close()


@pytest.mark.timeout(120)
def test_the_gateway_passable_variable_wins(tmp_path: Path, server: MessagesServer) -> None:
    project = _project(tmp_path)
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    env = {ROOT_ENV: str(project), "KERNEL_WORKING_DIR": "/home/someone/project"}
    kernel = agent_kernel(gateway, server.base_url, env=env)
    try:
        status = kernel.run("%agent status").text()
        assert ROOT_ENV in status and str(project.resolve()) in status
    finally:
        kernel.close()
