"""The JupyterLab extension in a real browser: Debian's Chromium driven by Playwright.

One `jupyter lab` (127.0.0.1, a token, a temporary root) and one scripted loopback Messages
API server are shared by the module; the kernel finds the server through
`ANTHROPIC_BASE_URL` in the lab server's environment. The tests click what a person clicks
(Allow, a card, Preview, Open full output, the palette) and fail on any console error.
Screenshots of both themes go to `test-artifacts/` for a person to look at.

Needs `chromium` on PATH (CI installs Debian's package), `playwright` (the Python package;
its own browser download is not used), and the extension installed in the environment
(`pip install -e .` builds it).
"""

from __future__ import annotations

import json
import os
import re
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
import nbformat
import pytest

from jupyter_toolhost.jupyter.render import CallCard, batch_display
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    # CI installs it (./dev test): there a missing browser fails the run instead of skipping.
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

pytestmark = pytest.mark.timeout(120)

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
MIME = "application/vnd.jupyter.toolhost.v1+json"
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
# `seq 1 20000 | tee count.txt` prints 108,894 bytes (106.3KB): over Bash's 50,000, so persisted
LINES = 20_000


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


def _agent_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%%agent\nWhat does hello.py do, and count to 20000."),
    ]
    notebook.metadata["kernelspec"] = KERNELSPEC
    return notebook


def _saved_outputs_notebook() -> nbformat.NotebookNode:
    """A notebook whose outputs were saved by the kernel's own renderer (no kernel needed)."""
    cards = [
        CallCard(
            "toolu_a",
            "Grep",
            "TODO in src/",
            batch=1,
            status="done",
            started=1.0,
            ended=1.4,
            result="src/a.py:3: # TODO tidy\nsrc/b.py:9: # TODO test",
        ),
        CallCard(
            "toolu_b",
            "Read",
            "src/a.py",
            batch=1,
            status="done",
            started=1.0,
            ended=1.1,
            result="     1\timport os\n     2\tprint(os.getcwd())\n",
        ),
        CallCard(
            "toolu_c",
            "Bash",
            "rm -rf build",
            batch=1,
            status="denied",
            started=1.0,
            ended=1.0,
            result="Permission denied by rule Bash(rm:*)",
        ),
    ]
    shown = batch_display(cards, batch=1)
    output = nbformat.v4.new_output("display_data", data=shown.data)
    cell = nbformat.v4.new_code_cell("%%agent\nfind the TODOs", outputs=[output])
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook.metadata["kernelspec"] = KERNELSPEC
    return notebook


@dataclass
class Lab:
    """A running `jupyter lab` and what the tests need to reach it."""

    url: str
    root: Path
    server: MessagesServer
    log: Path
    process: subprocess.Popen[bytes]
    errors: list[str] = field(default_factory=list)


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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    root, home = base / "root", base / "home"
    root.mkdir()
    home.mkdir()
    _write_settings(base / "settings")
    (root / ".toolhost" / "sessions").mkdir(parents=True)
    (root / "hello.py").write_text('print("hello from the browser test")\n')
    nbformat.write(_agent_notebook(), root / "agent.ipynb")
    nbformat.write(_saved_outputs_notebook(), root / "saved.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "jupyter-lab.log"
    port = _free_port()

    with MessagesServer() as server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "HOME": str(home),
            "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        }
        env.pop("JUPYTER_TOOLHOST_HOME", None)
        if _installed_extension(env) is None:
            missing = (
                "the jupyter-toolhost lab extension is not installed in this environment: "
                "`pip install -e .` builds and installs it (needs node and npm)"
            )
            if os.environ.get("CI"):
                pytest.fail(missing)  # CI installs it: a missing build is a failure there
            pytest.skip(missing)
        command = [
            sys.executable, "-m", "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            # Persisted results live under `.toolhost/`; the server hides dot-folders unless
            # told otherwise, and "Open full output" needs to read them.
            "--ContentsManager.allow_hidden=True",
            "--LabApp.expose_app_in_browser=True",
        ]  # fmt: skip
        with log.open("wb") as sink:
            process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
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


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
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
        # The last state of the page, for a person looking into a failure.
        opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}-last.png"), full_page=True)
        context.close()


def _open(page: Any, lab: Lab, path: str) -> None:
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


def _set_theme(page: Any, theme: str) -> None:
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    page.wait_for_function(
        "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=20_000
    )
    page.wait_for_timeout(300)  # let the theme's stylesheet apply before a screenshot


def _shoot(locator: Any, name: str) -> Path:
    path = ARTIFACTS / name
    locator.screenshot(path=str(path))
    assert path.stat().st_size > 1000, f"{name} is empty"
    return path


def test_agent_cell_in_jupyterlab(page: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn(
            [
                text("Let me look at the file and count."),
                tool_use("Glob", {"pattern": "*.py"}),
                tool_use("Read", {"file_path": "hello.py"}),
                tool_use(
                    "Bash", {"command": f"seq 1 {LINES} | tee count.txt", "description": "count"}
                ),
            ]
        ),
        Turn([text("hello.py prints a greeting, and seq counted to 20000.")]),
    )
    started = time.monotonic()
    _open(page, lab, "agent.ipynb")
    _set_theme(page, "JupyterLab Light")
    page.wait_for_function(IDLE)
    # Not awaited: the command's promise ends with the cells, and they wait for a click.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    agent_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
    # A real approval prompt (ipywidgets) in the busy cell: `tee` writes a file, so it asks.
    allow = agent_cell.get_by_role("button", name="Allow", exact=True)
    allow.click()
    agent_cell.get_by_text("seq counted to 20000").wait_for()
    bash = agent_cell.locator(".jp-Toolhost-card", has_text="Bash")
    bash.locator(".jp-Toolhost-statusLabel", has_text="done").wait_for()
    agent_cell.locator(".jp-Toolhost-footer").wait_for()
    page.wait_for_function(IDLE)

    # Glob and Read are concurrency-safe: one batch of two, grouped; Bash ran alone.
    group = agent_cell.locator(".jp-Toolhost-batch.jp-mod-concurrent")
    assert (
        group.locator(".jp-Toolhost-batchLabel").inner_text().endswith("2 calls ran concurrently")
    )
    assert group.locator(".jp-Toolhost-name").all_inner_texts() == ["Glob", "Read"]
    assert agent_cell.locator("text=Allowed Bash").count() >= 1  # the decision record stays
    assert bash.locator(".jp-Toolhost-duration").inner_text().endswith(("ms", "s"))
    outputs = agent_cell.locator(".jp-Cell-outputArea")
    _shoot(outputs, "toolhost-light-compact.png")

    # The persisted result: open the card, unfold the preview, open the whole file.
    bash.locator(".jp-Toolhost-cardHeader").click()
    persisted = bash.locator(".jp-Toolhost-persisted")
    assert "Full output: 106.3KB" in persisted.locator(".jp-Toolhost-persistedInfo").inner_text()
    persisted.locator("summary", has_text="Preview").click()
    preview = persisted.locator(".jp-Toolhost-preview .jp-Toolhost-code")
    assert preview.inner_text().startswith("1\n2\n3\n")
    # The Read result is highlighted by JupyterLab's CodeMirror grammar for Python.
    # (by its name: another card's decision reason may say "read-only")
    read = group.locator(
        ".jp-Toolhost-card", has=page.locator(".jp-Toolhost-name", has_text=re.compile("^Read$"))
    )
    read.locator(".jp-Toolhost-cardHeader").click()
    assert read.locator(".jp-Toolhost-code span").count() > 0
    _shoot(outputs, "toolhost-light-expanded.png")

    persisted.get_by_role("button", name="Open full output").click()
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.path.includes('.toolhost/sessions/')"
        " && w.context.path.endsWith('.txt') && w.context.isReady; }"
    )
    opened = page.evaluate(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return {path: w.context.path, factory: w.context.model.type ?? '',"
        " editor: w.node.querySelector('.jp-FileEditor') !== null,"
        " lines: w.context.model.sharedModel.getSource().trimEnd().split('\\n').length}; }"
    )
    assert opened["editor"], opened
    assert opened["lines"] == LINES, opened  # the whole output, not the 2 KB preview
    _shoot(page.locator("#jp-main-dock-panel"), "toolhost-editor.png")

    # Dark theme: back to the notebook, same cards.
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'agent.ipynb'})"
    )
    _set_theme(page, "JupyterLab Dark")
    agent_cell.scroll_into_view_if_needed()
    _shoot(outputs, "toolhost-dark-expanded.png")
    _set_theme(page, "JupyterLab Light")

    assert lab.errors == [], lab.errors
    assert time.monotonic() - started < 60


def test_palette_commands_and_saved_outputs(page: Any, lab: Lab) -> None:
    _open(page, lab, "saved.ipynb")
    # Outputs saved in a file render with the extension (its renderer is safe, so it is
    # used for an untrusted notebook too): three cards in one concurrent batch.
    cards = page.locator(".jp-Toolhost-card")
    cards.first.wait_for()
    assert cards.count() == 3
    assert page.locator(".jp-Toolhost-card[data-status='denied']").count() == 1
    assert page.locator(".jp-Toolhost-batchLabel").inner_text() == (
        "Batch 1 · 3 calls ran concurrently"
    )
    page.get_by_role("button", name="Expand all").click()
    assert page.locator(".jp-Toolhost-cardBody:visible").count() == 3
    _shoot(page.locator(".jp-Cell-outputArea").first, "toolhost-saved-outputs.png")

    page.wait_for_function(IDLE)
    page.keyboard.press("Control+Shift+C")
    palette = page.locator("#command-palette")
    palette.locator("input").fill("Agent:")
    labels = palette.locator(".lm-CommandPalette-itemLabel").all_inner_texts()
    for wanted in ("Agent: interrupt", "Agent: show tools", "Agent: open session folder"):
        assert wanted in labels, labels

    # "Agent: show tools" runs `%agent tools` in the notebook's kernel, outside any cell.
    page.keyboard.press("Escape")
    _palette(page, "Agent: show tools")
    tools = page.locator(".jp-ToolhostTools")
    tools.locator(".jp-Toolhost-table").wait_for()
    shown = tools.inner_text()
    assert "Read" in shown and "Bash" in shown, shown
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'saved.ipynb'})"
    )

    # "Agent: interrupt" interrupts this notebook's kernel.
    page.wait_for_function(IDLE)
    page.evaluate(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const code = 'import time; time.sleep(60)';"
        " window.toolhostSleep = w.sessionContext.session.kernel.requestExecute({code}).done; }"
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'busy'"
    )
    _palette(page, "Agent: interrupt")
    reply = page.evaluate("() => window.toolhostSleep.then(reply => reply.content)")
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply

    # "Agent: open session folder" shows .toolhost/sessions/ in the file browser.
    _palette(page, "Agent: open session folder")
    page.locator(".jp-BreadCrumbs", has_text="sessions").wait_for()
    assert lab.errors == [], lab.errors


def _palette(page: Any, label: str) -> None:
    """Run a command the way a person does: Ctrl+Shift+C, type, Enter."""
    page.keyboard.press("Control+Shift+C")
    page.locator("#command-palette input").fill(label)
    active = page.locator("#command-palette .lm-CommandPalette-item.lm-mod-active")
    active.filter(has_text=label).wait_for()
    page.keyboard.press("Enter")
