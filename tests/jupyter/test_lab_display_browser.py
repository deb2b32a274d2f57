"""What an `%%agent` cell shows in JupyterLab, in Debian's Chromium at 1024×768: the plot
under the card of the call that drew it, the code it ran with "Insert as cell below", the
clock that ticks while a command runs and its newest output lines, a checklist that updates
in place, and a sub-agent's calls nested in its card, live. Screenshots go to
`test-artifacts/`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    new_page,
    notebook_of,
    open_notebook,
    require_browser,
    run_all,
    running_lab,
    set_theme,
    shoot,
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(150)

PLOT = """import matplotlib.pyplot as plt
import pandas as pd
by_class = pd.DataFrame({"klass": ["A", "B", "C"], "mean": [84.7, 77.0, 71.2]})
ax = by_class.plot.bar(x="klass", y="mean", title="Mean score per class", rot=0)
by_class"""
FIRST = [
    {"content": "Count the rows", "status": "in_progress", "activeForm": "Counting the rows"},
    {"content": "Ask a helper", "status": "pending", "activeForm": "Asking a helper"},
]
SECOND = [
    {"content": "Count the rows", "status": "completed", "activeForm": "Counting the rows"},
    {"content": "Ask a helper", "status": "completed", "activeForm": "Asking a helper"},
]
SLOW = "for i in 1 2 3 4 5; do echo step $i; sleep 0.7; done"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    import nbformat

    with running_lab(tmp_path_factory.mktemp("lab"), log_name="jupyter-lab-display.log") as lab:
        nbformat.write(
            notebook_of(
                "%load_ext jupyter_toolhost",
                "%agent allow PythonExec",
                "%%agent\nPlot the mean score per class.",
            ),
            lab.root / "plot.ipynb",
        )
        nbformat.write(
            notebook_of(
                "%load_ext jupyter_toolhost",
                "%agent allow Bash",
                "%%agent\nPlan, count slowly, then ask a helper.",
            ),
            lab.root / "live.ipynb",
        )
        yield lab


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with new_page(browser, lab, request.node.name, width=1024, height=768) as opened:
        yield opened


def test_the_plot_lands_under_its_card_and_the_code_becomes_a_cell(page: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn([tool_use("PythonExec", {"code": PLOT})]),
        Turn([text("Class A has the highest mean.")]),
    )
    open_notebook(page, lab, "plot.ipynb")
    set_theme(page, "JupyterLab Light")
    run_all(page)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
    cell.locator(".jp-Toolhost-footer").wait_for(timeout=60_000)
    page.wait_for_function(IDLE)

    # Output order in the cell: the PythonExec card, then its table and its plot, then text.
    children = cell.locator(".jp-OutputArea-child")
    kinds = children.evaluate_all(
        """nodes => nodes.map(n => n.querySelector('.jp-Toolhost-card') ? 'card'
             : n.querySelector('img') ? 'image'
             : n.querySelector('table') ? 'table'
             : n.querySelector('.jp-Toolhost-footer') ? 'footer' : 'other')"""
    )
    at = kinds.index("card")
    assert kinds[at + 1 : at + 3] == ["table", "image"], kinds
    card = cell.locator(".jp-Toolhost-card", has_text="PythonExec")
    assert "2 plots/tables below" in card.locator(".jp-Toolhost-displaysBelow").inner_text()
    # The header is one line; the whole code is in the card, highlighted.
    assert card.locator(".jp-Toolhost-summary").get_attribute("title") == PLOT
    card.locator(".jp-Toolhost-cardHeader").click()
    source = card.locator(".jp-Toolhost-codeSource")
    assert source.inner_text().rstrip("\n") == PLOT
    assert source.locator("span").count() > 0  # CodeMirror's Python grammar coloured it
    shoot(cell.locator(".jp-Cell-outputArea"), "toolhost-plot-under-card.png")

    card.get_by_role("button", name="Insert as cell below").click()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.model.cells.length === 4"
    )
    inserted = page.evaluate(
        "() => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " return {source: nb.model.cells.get(3).sharedModel.getSource(),"
        " type: nb.model.cells.get(3).type, active: nb.activeCellIndex}; }"
    )
    assert inserted == {"source": PLOT, "type": "code", "active": 3}
    assert lab.errors == [], lab.errors


def _cards(page: Any, cell: Any, name: str) -> Any:
    """The final cards of the calls of one tool (by name, not by text that mentions it)."""
    named = page.locator(".jp-Toolhost-name", has_text=re.compile(f"^{name}$"))
    return cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has=named)


def _live(page: Any) -> Any:
    return page.locator(".jp-Toolhost-root[data-kind='live']")


def test_live_clock_output_checklist_and_sub_agent_cards(page: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn([tool_use("ToolSearch", {"query": "todo checklist"})]),
        Turn([tool_use("TodoWrite", {"todos": FIRST})]),
        Turn([tool_use("Bash", {"command": SLOW, "description": "count slowly"})]),
        Turn(
            [
                tool_use(
                    "Agent",
                    {
                        "description": "look around",
                        "prompt": "List the notebooks, then wait a moment.",
                        "subagent_type": "general-purpose",
                    },
                )
            ]
        ),
        Turn([tool_use("Glob", {"pattern": "*.ipynb"}), tool_use("Sleep", {"duration_ms": 2500})]),
        Turn([text("Two notebooks.")]),
        Turn([tool_use("TodoWrite", {"todos": SECOND})]),
        Turn([text("All done.")]),
    )
    open_notebook(page, lab, "live.ipynb")
    run_all(page)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
    live = _live(cell)

    # While Bash runs: the checklist above it, the clock ticking, the newest lines coming.
    bash = live.locator(".jp-Toolhost-card", has_text="Bash")
    bash.locator(".jp-Toolhost-elapsed").wait_for(timeout=30_000)
    active = live.locator(".jp-Toolhost-checkItem[data-status='in_progress']")
    assert "Counting the rows" in active.inner_text()
    first = bash.locator(".jp-Toolhost-elapsed").inner_text()
    page.wait_for_timeout(2100)
    later = bash.locator(".jp-Toolhost-elapsed").inner_text()
    assert first != later, (first, later)
    assert bash.locator(".jp-Toolhost-tail").inner_text().startswith("step 1")
    shoot(cell.locator(".jp-Cell-outputArea"), "toolhost-live-bash.png")

    # While the sub-agent waits: its calls are cards inside the Agent card, live.
    agent = live.locator(".jp-Toolhost-card", has_text="Agent")
    nested = agent.locator(".jp-Toolhost-children .jp-Toolhost-card")
    nested.filter(has_text="Sleep").wait_for(timeout=30_000)
    assert nested.filter(has_text="Glob").get_attribute("data-status") == "done"
    shoot(cell.locator(".jp-Cell-outputArea"), "toolhost-live-subagent.png")

    cell.locator(".jp-Toolhost-footer").wait_for(timeout=60_000)
    page.wait_for_function(IDLE)
    # Afterwards each TodoWrite card keeps the checklist it wrote; the Agent card its calls.
    todos = _cards(page, cell, "TodoWrite")
    assert todos.count() == 2
    final = todos.nth(1).locator(".jp-Toolhost-checkItem")
    assert final.evaluate_all("items => items.map(i => i.dataset.status)") == [
        "completed",
        "completed",
    ]
    assert "2/2 done" in todos.nth(1).locator(".jp-Toolhost-checklistHeader").inner_text()
    done_agent = _cards(page, cell, "Agent").first
    assert done_agent.locator(".jp-Toolhost-childCount").inner_text() == "2 calls"
    assert _live(cell).locator(".jp-Toolhost-card").count() == 0  # the live panel ended empty
    shoot(cell.locator(".jp-Cell-outputArea"), "toolhost-live-final.png")

    # Legible on a projector at 1024×768: no text in the cards, badges, durations or the
    # footer under 12 px.
    sizes = cell.locator(".jp-Toolhost-root").evaluate_all(
        """roots => roots.flatMap(root => [...root.querySelectorAll('*')])
             .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
             .filter(e => e.getClientRects().length)
             .map(e => [parseFloat(getComputedStyle(e).fontSize), e.className])"""
    )
    small = [(size, name) for size, name in sizes if size < 12]
    assert sizes and not small, small
    assert lab.errors == [], lab.errors
