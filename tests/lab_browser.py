"""A real JupyterLab in Debian's Chromium, for the browser tests of the lab extension.

`running_lab(...)` starts `jupyter lab` on 127.0.0.1 with a token and a temporary root, and
with no flag beyond what any person would pass (no `allow_hidden`: saved results are read
through the kernel). The kernel finds the scripted loopback Messages API server through
`ANTHROPIC_BASE_URL` in the lab server's environment. `new_page(...)` opens a page that
records console errors; `open_notebook`, `set_theme` and `shoot` do what their names say.
Screenshots go to `test-artifacts/` for a person to look at.

Needs `chromium` on PATH (CI installs Debian's package), `playwright` (the Python package;
its own browser download is not used), and the extension installed in the environment
(`pip install -e .` builds it). Under CI=true a missing piece fails the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from jupyter_toolhost.testing import MessagesServer

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "toolhost-browser-test"
IDLE = (
    "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'idle'"
)
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def require_browser() -> tuple[str, Any]:
    """(chromium's path, `playwright.sync_api`); skips the module when either is missing,
    except under CI=true, where CI installs both and a missing one is a failure."""
    chromium = shutil.which("chromium")
    if chromium is None:
        if os.environ.get("CI"):
            raise RuntimeError("chromium is not installed: apt-get install -y chromium")
        pytest.skip(
            "chromium is not installed (CI installs it: apt-get install -y chromium)",
            allow_module_level=True,
        )
    if os.environ.get("CI"):
        import playwright.sync_api as sync_api
    else:
        sync_api = pytest.importorskip(
            "playwright.sync_api", reason="the playwright Python package is not installed"
        )
    return chromium, sync_api


@dataclass
class Lab:
    """A running `jupyter lab` and what the tests need to reach it."""

    url: str
    root: Path
    server: MessagesServer
    log: Path
    process: subprocess.Popen[bytes]
    errors: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_settings(settings: Path) -> None:
    """User settings that keep pop-ups (news, update checks) out of the screenshots."""
    target = settings / "@jupyterlab" / "apputils-extension"
    target.mkdir(parents=True)
    (target / "notification.jupyterlab-settings").write_text(
        json.dumps({"checkForUpdates": False, "fetchNews": "false"})
    )


def _installed_extension(env: dict[str, str]) -> Path | None:
    """Where JupyterLab will find the built extension in this environment, if anywhere."""
    from jupyter_core.paths import jupyter_path

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        folders = jupyter_path("labextensions")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    for folder in folders:
        if (Path(folder) / "jupyter-toolhost" / "package.json").is_file():
            return Path(folder) / "jupyter-toolhost"
    return None


@contextlib.contextmanager
def running_lab(
    base: Path,
    *,
    log_name: str = "jupyter-lab.log",
    app: str = "jupyterlab",
    without_extension: bool = False,
    env: dict[str, str] | None = None,
    unset: tuple[str, ...] = (),
) -> Iterator[Lab]:
    """`jupyter lab` (or `app="notebook"`: Notebook 7) on a fresh root (`base / "root"`),
    beside a scripted Messages API server. `without_extension` disables the toolhost renderer,
    as in a front end that does not have it: cells then show the `text/html` fallback. `env`
    adds variables to the lab server's environment and `unset` removes some."""
    root, home = base / "root", base / "home"
    root.mkdir()
    home.mkdir()
    _write_settings(base / "settings")
    if without_extension:
        labconfig = base / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        (labconfig / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {"jupyter-toolhost": True}})
        )
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / log_name
    port = _free_port()
    with MessagesServer() as server:
        full_env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "HOME": str(home),
            "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        }
        full_env.pop("JUPYTER_TOOLHOST_HOME", None)
        full_env.update(env or {})
        for name in unset:
            full_env.pop(name, None)
        if _installed_extension(full_env) is None:
            missing = (
                "the jupyter-toolhost lab extension is not installed in this environment: "
                "`pip install -e .` builds and installs it (needs node and npm)"
            )
            if os.environ.get("CI"):
                pytest.fail(missing)  # CI installs it: a missing build is a failure there
            pytest.skip(missing)
        command = [
            sys.executable, "-m", app,
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            f"--{'LabApp' if app == 'jupyterlab' else 'JupyterNotebookApp'}"
            ".expose_app_in_browser=True",
        ]  # fmt: skip
        with log.open("wb") as sink:
            process = subprocess.Popen(command, env=full_env, stdout=sink, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url, process, log)
            yield Lab(url=url, root=root, server=server, log=log, process=process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"jupyter lab exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/api/status", params={"token": TOKEN}, timeout=2).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"jupyter lab did not start within 60 s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def new_page(
    browser: Any, lab: Lab, name: str, *, width: int = 1280, height: int = 1000
) -> Iterator[Any]:
    """A page that records console errors in `lab.errors`; its last state is saved as
    `test-artifacts/<name>-last.png`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    lab.errors = errors
    try:
        yield opened
    finally:
        opened.screenshot(path=str(ARTIFACTS / f"{name}-last.png"), full_page=True)
        context.close()


def open_notebook(page: Any, lab: Lab, path: str) -> None:
    page.goto(f"{lab.url}/lab/tree/{path}?token={TOKEN}&reset")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.context"
        f" && window.jupyterapp.shell.currentWidget.context.path === {json.dumps(path)}"
    )
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    loaded = page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
        ".federated_extensions.map(e => e.name)"
    )
    assert "jupyter-toolhost" in loaded, loaded


def run_all(page: Any) -> None:
    """Run every cell, not waiting (cells may wait for a click)."""
    page.wait_for_function(IDLE)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def set_theme(page: Any, theme: str) -> None:
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    page.wait_for_function(
        "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=20_000
    )
    page.wait_for_timeout(300)  # let the theme's stylesheet apply before a screenshot


def shoot(locator: Any, name: str) -> Path:
    path = ARTIFACTS / name
    locator.screenshot(path=str(path))
    assert path.stat().st_size > 1000, f"{name} is empty"
    return path
