"""The approval prompt with the keyboard, in a real JupyterLab in Debian's Chromium.

Real keys, as a person presses them: with the focus in a prompt, Enter allows once and
Escape denies; Alt+C (the access key of "Allow for this cell") allows the cell's second
call without asking again; Alt+E opens Edit, where the command is typed over before it is
allowed. Under CI=true a missing chromium is a failure, not a skip.
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
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()

pytestmark = pytest.mark.timeout(240)

PROMPTS = [
    "%%agent --new\nSet one",
    "%%agent --new\nSet two",
    "%%agent --new\nCount twice",
    "%%agent --new\nWrite a file",
]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with running_lab(
        tmp_path,
        log_name="jupyter-lab-approval-keys.log",
        env={
            "JUPYTER_TOOLHOST_HOME": str(tmp_path / "root" / ".toolhost"),
            "JUPYTER_TOOLHOST_BASH_SANDBOX": "0",
        },
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
        notebooks={"keys.ipynb": ["%load_ext jupyter_toolhost", *PROMPTS]},
    ) as started:
        yield started


def _focus_prompt(cell: Any) -> None:
    """Click the prompt's text, as a person does before pressing a key."""
    cell.locator(".toolhost-approval .widget-html").first.click()


def test_enter_escape_and_access_keys_decide(lab: Lab, browser: Any) -> None:
    server, root = lab.server, lab.root
    count = {"code": "keyed = globals().get('keyed', 0) + 1"}
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "one = 1"})]),
        Turn([text("One.")]),
        Turn([tool_use("PythonExec", {"code": "two = 2"})]),
        Turn([text("Not two.")]),
        Turn([tool_use("PythonExec", count)]),
        Turn([tool_use("PythonExec", count)]),
        Turn([text("Counted.")]),
        Turn([tool_use("Bash", {"command": "echo from-the-model > typed.txt"})]),
        Turn([text("Written.")]),
    )
    with new_page(browser, lab, "approval-keys") as page:
        page.set_default_timeout(60_000)
        page.goto(f"{lab.url}/lab/tree/keys.ipynb?token={TOKEN}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        run_all(page)

        first = cells.nth(1)
        first.get_by_role("button", name="Allow once", exact=True).wait_for()
        _focus_prompt(first)
        page.keyboard.press("Enter")
        first.get_by_text("One.").wait_for()
        assert "Allowed PythonExec: one = 1 (once)" in first.inner_text()

        second = cells.nth(2)
        second.get_by_role("button", name="Deny", exact=True).wait_for()
        _focus_prompt(second)
        page.keyboard.press("Escape")
        second.get_by_text("Not two.").wait_for()
        assert "Denied PythonExec: two = 2" in second.inner_text()

        third = cells.nth(3)
        button = third.get_by_role("button", name="Allow for this cell", exact=True)
        button.wait_for()
        assert button.get_attribute("accesskey") == "c"
        _focus_prompt(third)
        page.keyboard.press("Alt+c")
        third.get_by_text("Counted.").wait_for()
        assert "(for this cell: PythonExec)" in third.inner_text()
        assert third.get_by_role("button", name="Allow for this cell").count() == 0

        fourth = cells.nth(4)
        fourth.get_by_role("button", name="Edit", exact=True).wait_for()
        _focus_prompt(fourth)
        page.keyboard.press("Alt+e")
        box = fourth.locator("textarea").first
        box.wait_for()
        box.fill("")
        box.press_sequentially("echo typed-by-a-person > typed.txt", delay=5)
        fourth.get_by_role("button", name="Allow as edited", exact=True).click()
        fourth.get_by_text("Written.").wait_for()
        page.wait_for_function(IDLE)
    assert (root / "typed.txt").read_text() == "typed-by-a-person\n"
    assert server.errors == [], server.errors
    told = [
        b.get("text", "")
        for b in server.requests[-1].body["messages"][-1]["content"]
        if b.get("type") == "text"
    ]
    assert any("The person edited this Bash call's input" in t for t in told), told
