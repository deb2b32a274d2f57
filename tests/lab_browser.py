"""A real JupyterLab in Debian's Chromium, for the browser tests of the lab extension.

`running_lab(...)` starts `jupyter lab` on 127.0.0.1 with a token and a temporary root, and
with no flag beyond what any person would pass (no `allow_hidden`: saved results are read
through the kernel). The kernel finds the scripted loopback Messages API server through
`ANTHROPIC_BASE_URL` in the lab server's environment. `new_page(...)` opens a page that
records console errors; `open_notebook`, `run_cell`, `set_theme` and `shoot` do what their
names say, and `low_contrast` lists the text under an element that reads below WCAG's 4.5:1.
Screenshots go to `test-artifacts/` for a person to look at (and, for the documentation's
views, to the folder `JUPYTER_TOOLHOST_SCREENSHOTS` names: `./dev screenshots`).

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
from collections.abc import Iterator, Mapping, Sequence
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
THEMES = ("JupyterLab Light", "JupyterLab Dark")
SCREENSHOTS_ENV = "JUPYTER_TOOLHOST_SCREENSHOTS"
"""A folder (the docs' images) where `shoot(..., doc=True)` also writes its picture."""
MIN_CONTRAST = 4.5
"""WCAG 2 AA for body text, the figure the docs promise for every view in both themes."""
CONTRAST = """
async (root) => {
  // JupyterLab does not lay out cells far off screen (content-visibility): bring `root` in
  // and let two frames pass before anything is measured.
  root.scrollIntoView({block: 'nearest'});
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  // WCAG 2 contrast of every piece of text under `root` against what is behind it, from
  // computed styles: a colour (times the opacity of its element and of every ancestor) over
  // the nearest opaque background, partly transparent backgrounds blended on the way. Text
  // nodes (HTML and SVG) and the placeholders of empty text boxes are checked.
  // Any computed colour (rgb(), and color(srgb …) as color-mix() computes) as [r, g, b, a],
  // read back from a 1×1 canvas painted with it.
  const pixel = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  const parse = (c) => {
    if (!c || c === 'none') return null;
    pixel.clearRect(0, 0, 1, 1);
    pixel.fillStyle = '#000';
    pixel.fillStyle = c;
    pixel.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = pixel.getImageData(0, 0, 1, 1).data;
    return a ? [r, g, b, a / 255] : [0, 0, 0, 0];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let colour = [255, 255, 255, 1];
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const opacity = (el) => {
    let value = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      value *= Number(getComputedStyle(n).opacity);
    }
    return value;
  };
  const luminance = (c) => {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (l1 + 0.05) / (l2 + 0.05);
  };
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0
      && el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  };
  const found = [];
  const add = (el, text, fg, bg, style) => {
    if (!fg || !bg) return;
    fg = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
    found.push({text: text.slice(0, 40), ratio: ratio(fg, bg), px: parseFloat(style.fontSize),
                cls: (el.getAttribute('class') || el.tagName).slice(0, 60)});
  };
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || !shown(el)) continue;
    // JupyterLab's own output prompts ("[3]:") are its chrome, not a view of this package.
    if (el.closest('.jp-OutputPrompt, .jp-InputPrompt')) continue;
    // Syntax colours are JupyterLab's own highlighting theme (CodeMirror's ͼ classes), as
    // in its code cells; they are not this package's to choose.
    if (/^ͼ/.test(el.getAttribute('class') || '')) continue;
    const style = getComputedStyle(el);
    if (el instanceof SVGElement) {
      const svg = el.ownerSVGElement || el;
      const rect = svg.querySelector('.toolhost-background');
      let bg = rect ? parse(getComputedStyle(rect).fill) : background(svg);
      if (bg && bg[3] < 1) bg = over(bg, background(svg));
      add(el, text, parse(style.fill), bg, style);
    } else {
      add(el, text, parse(style.color), background(el), style);
    }
  }
  for (const box of root.querySelectorAll('input[placeholder], textarea[placeholder]')) {
    const text = box.getAttribute('placeholder').trim();
    if (!text || box.value || !shown(box)) continue;
    const style = getComputedStyle(box, '::placeholder');
    add(box, text, parse(style.color), background(box), style);
  }
  return found;
}
"""


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
    """User settings that keep pop-ups (news, update checks) out of the screenshots, and
    every cell of a notebook in the page: JupyterLab's default windowing changed in 4.5
    (4.4 attaches only the cells in view, so a cell below the fold is not there to find or
    type into; 4.5 keeps all of them and lets the browser skip drawing those off screen).
    The tests check the renderer, not JupyterLab's windowing, whatever the release."""
    for plugin, values in (
        ("apputils-extension/notification", {"checkForUpdates": False, "fetchNews": "false"}),
        ("notebook-extension/tracker", {"windowingMode": "none"}),
    ):
        target = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))


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
    notebooks: Mapping[str, Sequence[str]] | None = None,
    files: Mapping[str, str] | None = None,
) -> Iterator[Lab]:
    """`jupyter lab` (or `app="notebook"`: Notebook 7) on a fresh root (`base / "root"`),
    beside a scripted Messages API server. `without_extension` disables the toolhost renderer,
    as in a front end that does not have it: cells then show the `text/html` fallback. `env`
    adds variables to the lab server's environment and `unset` removes some. `notebooks`
    (name → the sources of its code cells) and `files` (name → text) are written into the
    root first."""
    root, home = base / "root", base / "home"
    root.mkdir()
    home.mkdir()
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    for name, sources in (notebooks or {}).items():
        write_notebook(root / name, *sources)
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


def notebook_of(*sources: str) -> Any:
    """A notebook of code cells, one per source, that names the kernel the labs run."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = KERNELSPEC
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return notebook


def write_notebook(path: Path, *sources: str) -> Path:
    """`notebook_of(*sources)` saved at `path`."""
    import nbformat

    nbformat.write(notebook_of(*sources), path)
    return path


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


def run_cell(page: Any, index: int) -> None:
    """Run the notebook's cell `index` (from 0) once the kernel is idle, not waiting for it."""
    page.wait_for_function(IDLE)
    page.evaluate(
        """index => { const nb = window.jupyterapp.shell.currentWidget.content;
             nb.activeCellIndex = index; nb.deselectAll();
             window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        index,
    )


def code_cell(page: Any, index: int) -> Any:
    """The notebook's code cell `index` (from 0)."""
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def low_contrast(root: Any, minimum: float = MIN_CONTRAST) -> list[str]:
    """Each piece of text under `root` (a locator) whose contrast is below `minimum`, as
    "text (class) ratio"; fails when `root` holds no text at all (nothing was checked)."""
    found = root.evaluate(CONTRAST)
    for _ in range(50):  # (a live view is redrawn as it updates: wait for its text again)
        if found:
            break
        root.page.wait_for_timeout(100)
        found = root.evaluate(CONTRAST)
    assert found, "no text found to check"
    return [f"{f['text']!r} ({f['cls']}) {f['ratio']:.2f}:1" for f in found if f["ratio"] < minimum]


def set_theme(page: Any, theme: str) -> None:
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    page.wait_for_function(
        "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=20_000
    )
    page.wait_for_timeout(300)  # let the theme's stylesheet apply before a screenshot


SHOWN_PART = """
async (el) => {
  // The part of `el` a person sees once it is scrolled to its top: its box within the
  // scrolling panels around it and the window.
  el.scrollIntoView({block: 'start'});
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  let {left, top, right, bottom} = el.getBoundingClientRect();
  for (let n = el.parentElement; n; n = n.parentElement) {
    if (!/(auto|scroll)/.test(getComputedStyle(n).overflowY)) continue;
    const box = n.getBoundingClientRect();
    if (!box.height) continue;
    [left, top] = [Math.max(left, box.left), Math.max(top, box.top)];
    [right, bottom] = [Math.min(right, box.right), Math.min(bottom, box.bottom)];
  }
  [right, bottom] = [Math.min(right, innerWidth), Math.min(bottom, innerHeight)];
  return {x: left, y: top, width: right - left, height: bottom - top};
}
"""


def shoot(locator: Any, name: str, *, doc: bool = False) -> Path:
    """A picture of what a person sees of `locator` (scrolled to its top; a part taller than
    the notebook's panel is cut at the panel's bottom) in `test-artifacts/`; with `doc`, also
    in the folder `JUPYTER_TOOLHOST_SCREENSHOTS` names, when it is set (`./dev screenshots`)."""
    path = ARTIFACTS / name
    page = locator.page
    page.mouse.move(0, 0)  # no hover highlight in the picture
    clip = locator.evaluate(SHOWN_PART)
    page.screenshot(path=str(path), clip=clip, animations="disabled", caret="hide")
    assert path.stat().st_size > 1000, f"{name} is empty"
    folder = os.environ.get(SCREENSHOTS_ENV)
    if doc and folder:
        from PIL import Image

        Path(folder).mkdir(parents=True, exist_ok=True)
        # 256 colours are plenty for text and flat fills, at about a third of the bytes.
        with Image.open(path) as picture:
            picture.convert("RGB").quantize(colors=256).save(Path(folder) / name, optimize=True)
    return path
