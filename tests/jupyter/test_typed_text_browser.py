"""What a person types into a prompt reaches the model whole, in a real JupyterLab in Chromium.

Real keystrokes (Playwright's `press_sequentially`, the keystroke-by-keystroke `type`), slow
(a delay between keys) and at full speed, into the Deny reason box (then a click on Deny,
or Enter) and into AskUserQuestion's "Other" box (then Submit). Kernel tests set a widget's
value in one comm message and cannot see this path: the widget front end sends one update,
then holds the rest back until the kernel answers the first (see `jupyter.comm_ack`).

Then the same notebook, saved and reopened by a fresh kernel (whose widget manager has none
of the first kernel's models), and exported to HTML: no dead widget anywhere, the records
stay. Needs `chromium` on PATH and `playwright`; under CI=true a missing one fails the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    running_lab,
    write_notebook,
)

from jupyter_toolhost.jupyter.widgets.approval import FEEDBACK_PLACEHOLDER
from jupyter_toolhost.jupyter.widgets.questions import OTHER_PLACEHOLDER
from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(400)

SLOW_REASON = "use notes.md instead"
FAST_REASON = "keep out.txt as it is, write draft.txt"
SLOW_OTHER = "a violin plot please"
FAST_OTHER = "a box plot, split by class"
QUESTION = {
    "question": "Which chart should I draw?",
    "header": "Chart",
    "options": [
        {"label": "Bar chart", "description": "Mean per class"},
        {"label": "Histogram", "description": "All scores"},
    ],
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


CELLS = (
    "%load_ext jupyter_toolhost",
    "%%agent\nWrite out.txt (I will say why not, slowly)",
    "%%agent\nWrite out.txt (I will say why not, fast, Enter)",
    "%%agent\nAsk me which chart (I answer slowly)",
    "%%agent\nAsk me which chart (I answer fast)",
)
"""The sources of the notebook's code cells."""


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:

    with running_lab(
        tmp_path,
        log_name="jupyter-lab-typed.log",
        env={"JUPYTER_TOOLHOST_HOME": str(tmp_path / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
    ) as started:
        write_notebook(started.root / "typed.ipynb", *CELLS)
        yield started


def _run_cell(page: Any, index: int) -> Any:
    page.wait_for_function(IDLE)
    page.evaluate(
        """index => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = index;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def _wait_done(page: Any, cell: Any, answer: str) -> None:
    cell.get_by_text(answer).wait_for(timeout=60_000)
    page.wait_for_function(
        "cell => !cell.querySelector('.jp-InputPrompt').innerText.includes('*')",
        arg=cell.element_handle(),
        timeout=60_000,
    )


def _last_tool_result(lab: Lab) -> dict[str, Any]:
    [result] = [
        block
        for block in lab.server.requests[-1].body["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    ]
    return result


def _deny_with_reason(page: Any, lab: Lab, index: int, reason: str, *, fast: bool) -> None:
    lab.server.add_turns(
        Turn([tool_use("Write", {"file_path": "out.txt", "content": "overwritten\n"})]),
        Turn([text(f"Understood ({index}).")]),
    )
    cell = _run_cell(page, index)
    box = cell.get_by_placeholder(FEEDBACK_PLACEHOLDER)
    box.wait_for(timeout=60_000)
    box.click()
    if fast:
        box.press_sequentially(reason)  # no delay: as fast as the browser takes keys
        box.press("Enter")  # Enter denies, at once after the last key
    else:
        box.press_sequentially(reason, delay=60)
        cell.get_by_role("button", name="Deny", exact=True).click()
    _wait_done(page, cell, f"Understood ({index}).")
    shown = cell.inner_text()
    assert f"Denied Write: out.txt — {reason} (by you)" in shown, shown
    result = _last_tool_result(lab)
    assert result.get("is_error") is True
    assert reason in json.dumps(result["content"]), result
    # Decided: the prompt is gone from the output, its record stays.
    assert cell.locator(".jupyter-widgets").count() == 0, "a decided prompt must not stay"


def _answer_other(page: Any, lab: Lab, index: int, answer: str, *, fast: bool) -> None:
    lab.server.add_turns(
        Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
        Turn([text(f"Drawing it ({index}).")]),
    )
    cell = _run_cell(page, index)
    other = cell.get_by_placeholder(OTHER_PLACEHOLDER)
    other.wait_for(timeout=60_000)
    other.click()
    other.press_sequentially(answer, delay=0 if fast else 60)
    cell.get_by_role("button", name="Submit", exact=True).click()
    _wait_done(page, cell, f"Drawing it ({index}).")
    assert f"Answered: Chart: {answer}" in cell.inner_text()
    result = _last_tool_result(lab)
    assert answer in json.dumps(result["content"]), result
    assert cell.locator(".jupyter-widgets").count() == 0, "an answered form must not stay"


def test_typed_text_arrives_whole_and_no_dead_widget_is_left(lab: Lab, browser: Any) -> None:
    import nbformat

    (lab.root / "out.txt").write_text("keep me\n")
    with new_page(browser, lab, "typed-text") as page:
        page.set_default_timeout(30_000)
        open_notebook(page, lab, "typed.ipynb")
        _run_cell(page, 0)
        _deny_with_reason(page, lab, 1, SLOW_REASON, fast=False)
        _deny_with_reason(page, lab, 2, FAST_REASON, fast=True)
        _answer_other(page, lab, 3, SLOW_OTHER, fast=False)
        _answer_other(page, lab, 4, FAST_OTHER, fast=True)
        page.wait_for_function(IDLE)
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000
        )
        page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.shutdown()"
        )
    assert (lab.root / "out.txt").read_text() == "keep me\n"
    assert lab.server.errors == [], lab.server.errors

    saved = nbformat.read(lab.root / "typed.ipynb", as_version=4)
    outputs = [output for cell in saved.cells for output in cell.get("outputs", [])]
    for output in outputs:
        data = output.get("data", {})
        assert WIDGET_VIEW not in data, output
        assert "VBox(" not in str(data.get("text/plain", "")), output
    streams = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert f"Denied Write: out.txt — {SLOW_REASON} (by you)" in streams
    assert f"Answered: Chart: {SLOW_OTHER}" in streams

    # Reopened by a fresh kernel: nothing says "Error displaying widget", the records stay.
    with new_page(browser, lab, "typed-text-reopened") as page:
        open_notebook(page, lab, "typed.ipynb")
        page.wait_for_function(IDLE, timeout=60_000)
        shown = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in shown and "model not found" not in shown
        assert f"Denied Write: out.txt — {FAST_REASON} (by you)" in shown
        assert f"Answered: Chart: {FAST_OTHER}" in shown

    # Exported to HTML (as nbviewer renders it): no widget, no repr of one.
    exported = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--stdout", "typed.ipynb"],
        cwd=lab.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "VBox(" not in exported and f'<script type="{WIDGET_VIEW}">' not in exported
    assert f"Denied Write: out.txt — {SLOW_REASON} (by you)" in exported


def test_no_key_says_what_to_do_and_agent_key_takes_it_hidden(tmp_path: Path, browser: Any) -> None:
    """A lab started without ANTHROPIC_API_KEY: the cell answers at once with the options,
    `%agent key` takes a key typed into the password box, and the cell then runs."""

    with running_lab(
        tmp_path,
        log_name="jupyter-lab-no-key.log",
        env={"JUPYTER_TOOLHOST_HOME": str(tmp_path / "root" / ".toolhost")},
        unset=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"),
    ) as lab:
        write_notebook(
            lab.root / "first.ipynb",
            "%load_ext jupyter_toolhost",
            "%%agent\nSay hello",
            "%agent key",
        )
        lab.server.add_turns(Turn([text("Hello from the model.")]))
        with new_page(browser, lab, "no-key") as page:
            page.set_default_timeout(30_000)
            open_notebook(page, lab, "first.ipynb")
            _run_cell(page, 0)
            cell = _run_cell(page, 1)
            cell.get_by_text("No Anthropic API key in this kernel").wait_for(timeout=60_000)
            shown = cell.inner_text()
            for option in ("%agent key", "%env ANTHROPIC_API_KEY=", "%%agent --cassette FILE"):
                assert option in shown, shown
            assert "Traceback" not in shown and "Error" not in shown
            assert lab.server.requests == []  # nothing was sent

            key_cell = _run_cell(page, 2)
            secret = key_cell.locator("input[type=password]")
            secret.wait_for(timeout=60_000)
            secret.press_sequentially("sk-ant-typed-in-the-browser", delay=20)
            secret.press("Enter")
            key_cell.get_by_text("set for this kernel").wait_for(timeout=60_000)
            assert "sk-ant-typed-in-the-browser" not in page.locator(".jp-Notebook").inner_text()

            cell = _run_cell(page, 1)
            _wait_done(page, cell, "Hello from the model.")
        [request] = lab.server.requests
        assert "sk-ant-typed-in-the-browser" in str(request.headers), request.headers
