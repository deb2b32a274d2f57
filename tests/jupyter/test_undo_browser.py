"""Undo in a real JupyterLab in Debian's Chromium at 1024x768: the person allows a Write,
clicks **Undo this cell's changes** under the finished cell, sees the diff, confirms, and
the file is as it was. Needs `chromium` on PATH and the `playwright` package; under CI=true
a missing chromium is a failure, not a skip.
"""

from __future__ import annotations

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
    shoot,
)

from jupyter_toolhost.jupyter.magic.undo import FOOTER_LABEL, UNDO_LABEL
from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with running_lab(
        tmp_path,
        log_name="jupyter-lab-undo.log",
        env={"JUPYTER_TOOLHOST_HOME": str(tmp_path / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
        files={"notes.md": "# Notes\n\nkeep this line\n"},
        notebooks={"undo.ipynb": ["%load_ext jupyter_toolhost", "%%agent\nRewrite notes.md"]},
    ) as started:
        yield started


def test_the_person_clicks_undo_and_confirms(lab: Lab, browser: Any) -> None:
    server, root = lab.server, lab.root
    server.add_turns(
        Turn([tool_use("Read", {"file_path": "notes.md"})]),
        Turn([tool_use("Write", {"file_path": "notes.md", "content": "# Notes\n\nrewritten\n"})]),
        Turn([text("I rewrote notes.md.")]),
    )
    with new_page(browser, lab, "undo", width=1024, height=768) as page:
        page.set_default_timeout(30_000)
        page.goto(f"{lab.url}/lab/tree/undo.ipynb?token={TOKEN}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        run_all(page)
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
        cell.get_by_role("button", name="Allow once", exact=True).click()
        cell.get_by_text("I rewrote notes.md.").wait_for()
        page.wait_for_function(IDLE)
        assert (root / "notes.md").read_text() == "# Notes\n\nrewritten\n"

        cell.get_by_role("button", name=FOOTER_LABEL).click()
        confirm = cell.get_by_role("button", name=UNDO_LABEL, exact=True)
        confirm.wait_for()
        diff = cell.locator(".toolhost-undo-diff")
        diff.wait_for()
        assert "-rewritten" in diff.inner_text() and "+keep this line" in diff.inner_text()
        assert (root / "notes.md").read_text() == "# Notes\n\nrewritten\n"  # not before the click
        confirm.scroll_into_view_if_needed()
        shoot(cell.locator(".jp-Cell-outputArea"), "undo.png")
        confirm.click()
        cell.get_by_text("notes.md: restored").wait_for()
    assert (root / "notes.md").read_text() == "# Notes\n\nkeep this line\n"
    assert server.errors == [], server.errors
    assert not [e for e in lab.errors if "toolhost" in e.lower()], lab.errors
