"""An approval prompt in a real JupyterLab in Debian's Chromium: it waits, one click decides.

A fresh kernel (ipywidgets not yet imported when JupyterLab's widget manager connected, so
no control comm) is the case that matters: the prompt must still be recognised as shown
and wait for a person, with no timeout, and a single click on Deny must end the cell.
Needs `chromium` on PATH and the `playwright` package; under CI=true a missing chromium is
a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    message = "chromium is not installed (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)
try:
    from playwright import sync_api
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("the playwright Python package is not installed", allow_module_level=True)

pytestmark = pytest.mark.timeout(150)

TOKEN = "toolhost-approval-test"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IDLE = (
    "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'idle'"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, MessagesServer, Path]]:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / "scratch.txt").write_text("keep me\n")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%%agent\nDelete scratch.txt"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, root / "ask.ipynb")
    port = _free_port()
    with MessagesServer() as server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "HOME": str(home),
            "JUPYTER_TOOLHOST_HOME": str(root / ".toolhost"),
            "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        }
        env.pop("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT", None)
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
        ]  # fmt: skip
        log = tmp_path / "lab.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                try:
                    if httpx.get(f"{url}/api/status", params={"token": TOKEN}).is_success:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            yield url, server, root
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def _busy(cell: Any) -> bool:
    return cell.locator(".jp-InputPrompt").inner_text().strip().startswith("[*]")


def test_the_prompt_waits_and_one_click_on_deny_ends_the_cell(
    lab: tuple[str, MessagesServer, Path],
) -> None:
    url, server, root = lab
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "import os; os.remove('scratch.txt')"})]),
        Turn([text("I left scratch.txt alone.")]),
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(30_000)
            page.goto(f"{url}/lab/tree/ask.ipynb?token={TOKEN}&reset")
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            page.wait_for_function(IDLE)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
            deny = cell.get_by_role("button", name="Deny", exact=True)
            deny.wait_for()
            shown = time.monotonic()
            page.wait_for_timeout(5_000)  # longer than the headless probe
            assert deny.is_visible() and deny.is_enabled(), "the prompt must still wait"
            assert _busy(cell), "the cell must stay busy while the prompt waits"
            assert "No front end" not in cell.inner_text()
            print(f"prompt still waiting {time.monotonic() - shown:.1f} s after it was shown")
            deny.click()
            cell.get_by_text("I left scratch.txt alone.").wait_for()
            page.wait_for_function(IDLE)
            page.wait_for_function(
                "cell => !cell.querySelector('.jp-InputPrompt').innerText.includes('*')",
                arg=cell.element_handle(),
            )
            assert "Denied PythonExec" in cell.inner_text()
        finally:
            browser.close()
    [result] = [
        b
        for b in server.requests[-1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    assert result.get("is_error") is True and "denied" in json.dumps(result["content"])
    assert (root / "scratch.txt").read_text() == "keep me\n"
    assert server.errors == [], server.errors
