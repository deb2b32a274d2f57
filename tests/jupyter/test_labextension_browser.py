"""The JupyterLab extension in a real browser: Debian's Chromium driven by Playwright.

One `jupyter lab` (127.0.0.1, a token, a temporary root, no extra server flags) and one
scripted loopback Messages API server are shared by the module (`lab_browser`). The tests
click what a person clicks (Allow, a card, Preview, Open full output, the palette) and fail
on any console error. Screenshots of both themes go to `test-artifacts/`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from lab_browser import (
    IDLE,
    KERNELSPEC,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    running_lab,
    set_theme,
    shoot,
    write_notebook,
)

from jupyter_toolhost.jupyter.views.cards import CallCard, batch_display
from jupyter_toolhost.testing import Turn, text, tool_use

if TYPE_CHECKING:
    import nbformat

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(120)

# `seq 1 20000 | tee count.txt` prints 108,894 bytes (106.3KB): over Bash's 50,000, so persisted
LINES = 20_000


AGENT_CELLS = ("%load_ext jupyter_toolhost", "%%agent\nWhat does hello.py do, and count to 20000.")
"""The sources of the agent notebook's code cells."""


def _saved_outputs_notebook() -> nbformat.NotebookNode:
    """A notebook whose outputs were saved by the kernel's own renderer (no kernel needed)."""
    import nbformat

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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    import nbformat

    with running_lab(tmp_path_factory.mktemp("lab")) as started:
        (started.root / ".toolhost" / "sessions").mkdir(parents=True)
        (started.root / "hello.py").write_text('print("hello from the browser test")\n')
        write_notebook(started.root / "agent.ipynb", *AGENT_CELLS)
        nbformat.write(_saved_outputs_notebook(), started.root / "saved.ipynb")
        yield started


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with new_page(browser, lab, request.node.name) as opened:
        yield opened


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
    open_notebook(page, lab, "agent.ipynb")
    set_theme(page, "JupyterLab Light")
    page.wait_for_function(IDLE)
    # Not awaited: the command's promise ends with the cells, and they wait for a click.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    agent_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
    # A real approval prompt (ipywidgets) in the busy cell: `tee` writes a file, so it asks.
    allow = agent_cell.get_by_role("button", name="Allow once", exact=True)
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
    shoot(outputs, "toolhost-light-compact.png")

    # The persisted result: open the card, unfold the preview, open the whole file.
    bash.locator(".jp-Toolhost-cardHeader").click()
    persisted = bash.locator(".jp-Toolhost-persisted")
    info = persisted.locator(".jp-Toolhost-persistedInfo").inner_text()
    assert "Full output: 106.3 KB" in info  # KB of 1,024 bytes, as the model is told
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
    # The bar of when it ran within its batch is labelled, so it is not taken for progress.
    label = read.locator(".jp-Toolhost-timingLabel").inner_text()
    assert re.fullmatch(r"[\d.]+[–-][\d.]+ s of [\d.]+ s", label), label
    shoot(outputs, "toolhost-light-expanded.png")

    # Open full output: read through the kernel (the server hides `.toolhost/` and was
    # started with no flag), shown read-only in a tab of its own.
    persisted.get_by_role("button", name="Open full output").click()
    viewer = page.locator(".jp-ToolhostResultViewer")
    viewer.locator(".jp-ToolhostResultViewer-text").wait_for()
    shown = viewer.locator(".jp-ToolhostResultViewer-text").inner_text()
    assert shown.rstrip("\n").split("\n") == [str(n) for n in range(1, LINES + 1)]
    header = viewer.locator(".jp-ToolhostResultViewer-header").inner_text()
    assert "read-only" in header
    assert "106.3 KB" in header  # the viewer and the card agree on the size
    assert viewer.locator(".jp-ToolhostResultViewer-loadMore:visible").count() == 0
    shoot(page.locator("#jp-main-dock-panel"), "toolhost-result-viewer.png")

    # Dark theme: back to the notebook, same cards.
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'agent.ipynb'})"
    )
    set_theme(page, "JupyterLab Dark")
    agent_cell.scroll_into_view_if_needed()
    shoot(outputs, "toolhost-dark-expanded.png")
    set_theme(page, "JupyterLab Light")

    assert lab.errors == [], lab.errors
    assert time.monotonic() - started < 60


def test_palette_commands_and_saved_outputs(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "saved.ipynb")
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
    shoot(page.locator(".jp-Cell-outputArea").first, "toolhost-saved-outputs.png")

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

    # "Agent: open session folder": the server hides `.toolhost/` (no flags), so the kernel
    # lists the saved results; Open reads one through the kernel.
    _palette(page, "Agent: open session folder")
    listing = page.locator(".jp-ToolhostResultList")
    listing.locator("[data-state='list'], [data-state='empty']").first.wait_for()
    rows = listing.locator("tr.jp-ToolhostResultList-row")
    assert rows.count() >= 1, listing.inner_text()  # the agent test's Bash output
    assert "/tool-results/" in (rows.first.get_attribute("data-path") or "")
    rows.first.locator("button.jp-ToolhostResultList-open").click()
    page.locator(".jp-ToolhostResultViewer .jp-ToolhostResultViewer-text").wait_for()
    assert lab.errors == [], lab.errors


def _palette(page: Any, label: str) -> None:
    """Run a command the way a person does: Ctrl+Shift+C, type, Enter."""
    page.keyboard.press("Control+Shift+C")
    page.locator("#command-palette input").fill(label)
    active = page.locator("#command-palette .lm-CommandPalette-item.lm-mod-active")
    active.filter(has_text=label).wait_for()
    page.keyboard.press("Enter")
