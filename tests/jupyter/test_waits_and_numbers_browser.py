"""What a person sees of waits, numbers, saved results and a stop, in JupyterLab 4.6 in
Debian's Chromium at 1024×768, with real clicks: an AskUserQuestion form is waited for
("Waiting for your answer · N s", the card "waiting for your answer", then "waited … for your
answer" beside its run time), the lab footer writes the same words as the kernel's text,
"Open full output" names the file relative to the notebook (never the machine's path),
`%agent output` shows a page in a box that scrolls with the cut marked, and a stopped cell
ends with its footer and one line. The model is scripted (the loopback Messages API)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    running_lab,
    shoot,
    write_notebook,
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(240)

QUESTION = {
    "question": "Which chart should I draw?",
    "header": "Chart",
    "options": [
        {"label": "Line chart (Recommended)", "description": "totals over time"},
        {"label": "Bar chart", "description": "totals per month"},
    ],
}
SLOW = "for i in 1 2 3 4 5 6 7 8 9 10; do echo step $i; sleep 0.6; done"


CELLS = (
    "%load_ext jupyter_toolhost\n%agent allow Bash(seq:*)",
    "%%agent\nAsk me, count, then answer.",
    "# %agent output goes here",
    "%%agent --mode bypassPermissions\nCount slowly.",
)
"""The sources of the notebook's code cells."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:

    base = tmp_path_factory.mktemp("waits")
    with running_lab(
        base,
        log_name="jupyter-lab-waits.log",
        env={"JUPYTER_TOOLHOST_HOME": str(base / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
    ) as started:
        write_notebook(started.root / "waits.ipynb", *CELLS)
        yield started


def _run_cell(page: Any, index: int) -> None:
    page.wait_for_function(IDLE)
    page.evaluate(
        """index => { const nb = window.jupyterapp.shell.currentWidget.content;
             nb.activeCellIndex = index; nb.deselectAll();
             window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        index,
    )


def _cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def _outputs(page: Any, index: int) -> list[dict[str, Any]]:
    """The cell's outputs as the notebook keeps them (what the kernel sent)."""
    return page.evaluate(
        """index => window.jupyterapp.shell.currentWidget.content.widgets[index]
             .model.outputs.toJSON()""",
        index,
    )


def _footer_text(outputs: list[dict[str, Any]]) -> str:
    plains = [
        o["data"]["text/plain"]
        for o in outputs
        if o.get("output_type") == "display_data" and "text/plain" in o.get("data", {})
    ]
    [footer] = [p for p in plains if p.startswith("── ")]
    return footer.removeprefix("── ").removesuffix(" ──")


def test_waits_numbers_saved_results_and_a_stop_read_right(browser: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
        Turn([tool_use("Bash", {"command": "seq 1 30000", "description": "count"})]),
        Turn([text("A line chart of 30,000 numbers.")]),
        Turn([tool_use("Bash", {"command": SLOW, "description": "count slowly"})]),
        Turn([text("Stopped.")]),
    )
    with new_page(browser, lab, "waits-numbers", width=1024, height=768) as page:
        open_notebook(page, lab, "waits.ipynb")
        _run_cell(page, 0)
        _run_cell(page, 1)
        cell = _cell(page, 1)
        live = cell.locator(".jp-Toolhost-root[data-kind='live']")

        # The form waits for a person: the card and the status line say so, with the wait's
        # own clock, never "running".
        waiting = live.locator(".jp-Toolhost-card[data-label='waiting for your answer']")
        waiting.wait_for(timeout=60_000)
        submit = cell.get_by_role("button", name="Submit", exact=True)
        submit.wait_for()
        page.wait_for_timeout(2500)
        status = live.locator(".jp-Toolhost-liveStatus").inner_text()
        assert re.fullmatch(r"Waiting for your answer · [1-9]\d* s", status), status
        assert "running" not in live.inner_text()
        shoot(cell.locator(".jp-Cell-outputArea"), "cell-waiting-for-your-answer.png")
        cell.get_by_role("button", name="Line chart (Recommended)").click()
        submit.click()

        cell.locator(".jp-Toolhost-footer").wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        asked = cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="AskUserQuestion")
        waited = asked.locator(".jp-Toolhost-approvalTime").inner_text()
        timed = re.fullmatch(r"waited ([\d.]+) s for your answer", waited)
        assert timed is not None and float(timed.group(1)) >= 2.5, waited
        run_time = asked.locator(".jp-Toolhost-duration").inner_text()
        assert run_time.endswith(" ms"), run_time  # the wait is not its run time

        # The lab footer writes the kernel's words, in its order, then the times.
        kernel_words = _footer_text(_outputs(page, 1))
        shown = cell.locator(".jp-Toolhost-footer").inner_text()
        assert shown.startswith(kernel_words + " · "), (shown, kernel_words)
        assert re.search(r"\d,\d{3} in / \d", shown) or re.search(r" \d{1,3} in / ", shown)
        assert re.search(r"waited [\d.]+ s for you$", shown), shown
        assert not re.search(r"(?<![\d,.])\d{4,}(?![\d,])", shown), shown

        # "Open full output" names the file relative to the notebook, in the tab too.
        bash = cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="seq 1 30000")
        bash.locator(".jp-Toolhost-cardHeader").click()
        relative = bash.locator(".jp-Toolhost-persistedPath").inner_text()
        assert relative.startswith(".toolhost/sessions/"), relative
        bash.get_by_role("button", name="Open full output").click()
        viewer = page.locator(".jp-ToolhostResultViewer-path")
        viewer.wait_for(timeout=30_000)
        assert viewer.inner_text() == relative
        root = str(lab.root)
        captions = page.evaluate(
            "() => [...window.jupyterapp.shell.widgets('main')].map(w => w.title.caption)"
        )
        assert not any(root in caption for caption in captions), captions
        assert root not in page.locator(".jp-ToolhostResultViewer-header").inner_text()
        assert root not in bash.inner_text()
        page.evaluate("() => window.jupyterapp.shell.currentWidget.close()")  # the viewer
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.context?.path === 'waits.ipynb'"
        )

        # %agent output: a page in a box that scrolls, the cut marked under it.
        page.evaluate(
            """path => { const nb = window.jupyterapp.shell.currentWidget.content;
                 nb.model.cells.get(2).sharedModel.setSource('%agent output ' + path); }""",
            relative,
        )
        _run_cell(page, 2)
        box = _cell(page, 2).locator("pre.toolhost-output")
        box.wait_for(timeout=30_000)
        sizes = box.evaluate("b => [b.clientHeight, b.scrollHeight, getComputedStyle(b).overflowY]")
        assert sizes[0] < 768 and sizes[1] > sizes[0] and sizes[2] == "auto", sizes
        cut = _cell(page, 2).locator(".toolhost-cut").inner_text()
        assert cut == f"… 29,000 more lines: %agent output {relative} --from 1001", cut
        assert root not in _cell(page, 2).inner_text()
        shoot(_cell(page, 2).locator(".jp-Cell-outputArea"), "agent-output-page.png")

        # A stopped cell ends with its footer, then one line: no second copy of it.
        _run_cell(page, 3)
        stopped = _cell(page, 3)
        running = stopped.locator(".jp-Toolhost-root[data-kind='live'] .jp-Toolhost-tail")
        running.filter(has_text="step 2").wait_for(timeout=60_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
        stopped.locator(".jp-Toolhost-footer").wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        footer = stopped.locator(".jp-Toolhost-footer").inner_text()
        assert "stop: interrupted" in footer, footer
        error = stopped.locator("[data-mime-type='application/vnd.jupyter.stderr']")
        assert error.count() == 1
        assert error.inner_text().startswith("Interrupted: "), error.inner_text()
        assert stopped.inner_text().count("The conversation is kept") == 1
        outputs = stopped.locator(".jp-OutputArea-output")
        last_two = outputs.evaluate_all(
            "nodes => nodes.filter(n => n.innerText.trim()).slice(-2).map(n => n.innerText)"
        )
        assert "stop: interrupted" in last_two[0] and last_two[1].startswith("Interrupted: ")
        shoot(stopped.locator(".jp-Cell-outputArea"), "cell-interrupted-footer.png")
        assert lab.errors == [], lab.errors
