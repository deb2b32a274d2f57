"""An approval prompt in a real JupyterLab in Debian's Chromium: it waits, one click decides.

A fresh kernel (ipywidgets not yet imported when JupyterLab's widget manager connected, so
no control comm) is the case that matters: the prompt must still be recognised as shown
and wait for a person, with no timeout, and a single click on Deny must end the cell.
Needs `chromium` on PATH and the `playwright` package; under CI=true a missing chromium is
a failure, not a skip.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    TOKEN,
    Lab,
    new_page,
    require_browser,
    run_all,
    running_lab,
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A lab of its own for each test, so each notebook starts a fresh kernel."""
    with running_lab(
        tmp_path,
        log_name="jupyter-lab-approval.log",
        env={"JUPYTER_TOOLHOST_HOME": str(tmp_path / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
        files={"scratch.txt": "keep me\n"},
        notebooks={"ask.ipynb": ["%load_ext jupyter_toolhost", "%%agent\nDelete scratch.txt"]},
    ) as started:
        assert started.root == tmp_path / "root"
        yield started


def _busy(cell: Any) -> bool:
    return cell.locator(".jp-InputPrompt").inner_text().strip().startswith("[*]")


def test_the_prompt_waits_and_one_click_on_deny_ends_the_cell(lab: Lab, browser: Any) -> None:
    server, root = lab.server, lab.root
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "import os; os.remove('scratch.txt')"})]),
        Turn([text("I left scratch.txt alone.")]),
    )
    with new_page(browser, lab, "approval-deny") as page:
        page.set_default_timeout(30_000)
        page.goto(f"{lab.url}/lab/tree/ask.ipynb?token={TOKEN}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        run_all(page)
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
    [result] = [
        b
        for b in server.requests[-1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    assert result.get("is_error") is True and "denied" in json.dumps(result["content"])
    assert (root / "scratch.txt").read_text() == "keep me\n"
    assert server.errors == [], server.errors
