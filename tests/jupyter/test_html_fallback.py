"""The same story outside JupyterLab: a notebook run headless (nbclient), exported with
nbconvert, and opened in Notebook 7 without the lab extension, shows from its `text/html`
what the lab cards show: status, duration, the reason a call was allowed, batch grouping,
the code that ran, the plot under its card, the tokens-and-cost footer, a height-capped
preview that says where it is cut, and where the saved result lives (the server refuses the
hidden `.toolhost/` folder, so no page links to it: `%agent output PATH` shows it through the
kernel, in Notebook 7 without the extension too). Every link in the export resolves. Pages
are looked at in Debian's Chromium at 1024×768; screenshots go to `test-artifacts/`."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from lab_browser import (
    ARTIFACTS,
    new_page,
    notebook_of,
    require_browser,
    running_lab,
    shoot,
)

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(150)

PLOT = """import matplotlib.pyplot as plt
ax = plt.figure(figsize=(4, 3)).gca()
ax.bar(["A", "B", "C"], [84.7, 77.0, 71.2])
ax.set_title("Mean score per class")"""
TURNS = [
    Turn(
        [
            text("Counting and listing at once."),
            tool_use("Glob", {"pattern": "*.csv"}),
            tool_use("Bash", {"command": "seq 1 20000", "description": "count"}),
        ]
    ),
    Turn([tool_use("PythonExec", {"code": PLOT})]),
    Turn([text("Done: one CSV, 20000 lines counted, and a bar chart.")]),
]


CELLS = (
    "%load_ext jupyter_toolhost",
    "%agent allow PythonExec\n%agent allow Bash(seq:*)",
    "%%agent --mode dontAsk\nCount, list the data and plot it.",
)
"""The sources of the notebook's code cells."""


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the executed notebook, its HTML export), side by side in the notebook's folder."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    folder = tmp_path_factory.mktemp("export")
    (folder / "scores.csv").write_text("class,score\nA,84.7\n")
    notebook = notebook_of(*CELLS)
    with MessagesServer(list(TURNS)) as server, pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("JUPYTER_TOOLHOST_")]:
            patch.delenv(name)
        patch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        patch.setenv("ANTHROPIC_API_KEY", "test-key")
        patch.setenv("HOME", str(folder))
        client = NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": folder}}
        )
        client.execute()
        assert server.errors == []
    path = folder / "agent.ipynb"
    nbformat.write(notebook, path)
    body, _ = HTMLExporter().from_notebook_node(notebook)
    exported = folder / "agent.html"
    exported.write_text(body)
    yield path, exported


def test_the_export_tells_the_whole_story(executed: tuple[Path, Path]) -> None:
    _, exported = executed
    page = exported.read_text()
    # Batch grouping, status and the reason each call was allowed.
    assert "Batch 1 · 2 calls ran concurrently" in page
    assert "allow rule Bash(seq:*)" in page and "allow rule PythonExec" in page
    assert "read-only tool" in page or "read-only, inside the working directories" in page
    # Durations (only inside the spans a comparison masks) and the footer's numbers.
    assert len(re.findall(r'class="toolhost-time"[^>]*>[\d.]+ (?:ms|s)<', page)) >= 4
    footer = re.search(r"3 tool calls · 3 model requests · [\d,]+ in / [\d,]+ out tokens", page)
    assert footer, "the footer names calls, requests and tokens"
    assert "%agent cost" not in page  # a reader of a page cannot run it
    # The code that ran, whole, and the plot it drew right under its card.
    code_at = page.replace("&quot;", '"').index('ax.set_title("Mean score per class")')
    card_at = page.rfind("PythonExec", 0, code_at)
    assert card_at > 0
    assert page.index("data:image/png;base64", card_at) > code_at
    # The saved result: where it lives, said plainly; a capped preview whose end says what
    # is left (KB of 1,024 bytes); no link to the hidden folder, which a server refuses.
    [where] = re.findall(
        r"saved in the notebook(?:'|&#x27;)s folder, <code>(\.toolhost/sessions/[^<]+\.txt)</code>",
        page,
    )
    saved = exported.parent / where
    assert saved.is_file() and saved.read_text().splitlines()[-1] == "20000"
    assert f"%agent output {where}" in page
    size = saved.stat().st_size
    preview = page.split("<summary>Preview</summary>")[1].split("</pre>")[0]
    shown = preview.rstrip("\n").count("\n") + 1
    assert f"… {20_000 - shown:,} more lines, {size / 1024:.1f} KB saved" in page
    assert "max-height:24em;overflow:auto" in page
    # What the page says about where output was saved is relative, never this machine's.
    assert f"saved to {exported.parent}" not in page


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))


def test_every_link_in_the_export_resolves(executed: tuple[Path, Path]) -> None:
    _, exported = executed
    links = _Links()
    links.feed(exported.read_text())
    for href in links.hrefs:
        if href.startswith(("http://", "https://", "mailto:")):
            continue  # the page's own links to the web (nbconvert's template, none of ours)
        if href.startswith("#"):
            assert href[1:] in links.ids, f"anchor {href} names no element"
            continue
        target = exported.parent / href.split("#")[0]
        assert target.exists(), f"{href} does not resolve next to the export"
        assert not any(part.startswith(".") for part in Path(href).parts), href


def test_the_export_reads_well_at_1024x768(executed: tuple[Path, Path], browser: Any) -> None:
    _, exported = executed
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    try:
        page.goto(exported.as_uri())
        page.get_by_text("Preview").first.click()  # open the saved result's preview
        sizes = page.evaluate(
            """() => [...document.querySelectorAll('.jp-OutputArea-output div[style*="border"]')]
                 .map(e => parseFloat(getComputedStyle(e).fontSize))"""
        )
        assert sizes and min(sizes) >= 12, sizes
        preview = page.locator("details[open] pre").first
        assert preview.bounding_box()["height"] <= 24 * 16 + 40  # capped, it scrolls
        assert page.locator("img[src^='data:image/png']").count() == 1
        page.get_by_text(re.compile(r"^\.toolhost/sessions/")).first.wait_for()
        marker = page.locator(".toolhost-cut").first
        assert re.fullmatch(r"… [\d,]+ more lines, [\d.]+ KB saved", marker.inner_text())
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "toolhost-nbconvert-1024.png"), full_page=True)
    finally:
        context.close()


def test_notebook_7_without_the_extension_shows_the_fallback(
    executed: tuple[Path, Path], browser: Any, tmp_path: Path
) -> None:
    notebook_path, _ = executed
    with running_lab(
        tmp_path, app="notebook", without_extension=True, log_name="notebook7.log"
    ) as lab:
        (lab.root / "agent.ipynb").write_bytes(notebook_path.read_bytes())
        shutil.copytree(notebook_path.parent / ".toolhost", lab.root / ".toolhost")
        with new_page(browser, lab, "notebook7-fallback", width=1024, height=768) as page:
            page.goto(f"{lab.url}/notebooks/agent.ipynb?token=toolhost-browser-test")
            output = page.locator(".jp-OutputArea-output", has_text="Batch 1 · 2 calls")
            output.first.wait_for()
            loaded = page.evaluate(
                "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
                ".disabledExtensions || []"
            )
            assert "jupyter-toolhost" in str(loaded), loaded
            assert page.locator(".jp-Toolhost-card").count() == 0  # no extension here
            cell = page.locator(".jp-CodeCell").nth(2)
            shown = cell.inner_text()
            for wanted in ("Bash", "seq 1 20000", "allow rule PythonExec", "tool calls", "tokens"):
                assert wanted in shown, wanted
            assert cell.locator("img").count() == 1
            shoot(cell, "toolhost-notebook7-fallback.png")

            # Open full output without the extension: the card says how, through the kernel.
            # The server itself refuses the hidden folder.
            hint = cell.locator("code", has_text=re.compile(r"^%agent output ")).first
            command = hint.inner_text()
            path = command.removeprefix("%agent output ")
            refused = page.request.get(f"{lab.url}/files/{path}?token=toolhost-browser-test")
            assert refused.status == 404
            page.locator(".jp-CodeCell").last.click()
            page.keyboard.press("Escape")
            page.keyboard.press("b")  # a new cell below, as a person adds one
            page.keyboard.press("Enter")
            page.keyboard.type(f"%load_ext jupyter_toolhost\n{command}")
            page.keyboard.press("Shift+Enter")
            shown = page.locator(".jp-CodeCell").nth(3).locator("pre.toolhost-output")
            shown.wait_for(timeout=60_000)
            text = shown.inner_text()
            # A page of it in a box that scrolls, the rest a command away.
            assert text.splitlines()[0] == "1" and text.rstrip().splitlines()[-1] == "1000"
            size = (lab.root / path).stat().st_size
            head = page.locator(".jp-CodeCell").nth(3).get_by_text(f"{path} · ").inner_text()
            assert head == f"{path} · {size / 1024:.1f} KB, lines 1–1,000 of 20,000"
            cut = page.locator(".jp-CodeCell").nth(3).locator(".toolhost-cut").inner_text()
            assert cut == f"… 19,000 more lines: %agent output {path} --from 1001"
            shoot(page.locator(".jp-CodeCell").nth(3), "toolhost-notebook7-full-output.png")
