"""Two students on one real JupyterHub, each their own system user, in Debian's Chromium.

`tests/hub_helpers.py` starts the hub (PAM login, `LocalProcessSpawner`, the npm proxy) with
two freshly created system users, each with a key of their own and a scripted loopback
Messages API server of their own. Both log in, open a notebook in a subfolder of their
notebook folder, and run `%%agent` cells at the same time, with the Bash sandox required
(real bubblewrap, run by the unprivileged user).

What is proved, in the order the module runs:

1. Each kernel starts in its notebook's folder and sends its own user's key.
2. Both cells ask at once; A's Allow decides A's call only (B's prompt still waits, B's
   model is sent nothing), B's Deny decides B's; the files and the tool_results show it.
3. B's saved state (a persisted result, a checkpoint, a recorded cassette, project and user
   settings) is made by B's own kernel under the default umask, and another user can read
   none of it: the hub's files are checked as A directly, then A's agent is asked to read
   and change them through Read, Bash (in the sandbox) and the results comm. Each is refused
   with a message naming the file, B's files are unchanged, and A's own saved result is
   still served by the same comm (so the refusal is not a broken comm).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_helpers import Hub, HubUser, login, require_hub, run_as, running_hub
from lab_browser import ARTIFACTS, IDLE, KERNELSPEC, code_cell, require_browser, run_all

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright
require_hub()  # ... and without root, JupyterHub or configurable-http-proxy

pytestmark = pytest.mark.timeout(300)

LESSON = "course/lesson.ipynb"
"""Each student's notebook, one folder below the server's root: the kernel must start there."""

RESULTS_COMM = """
async (request) => {
  // What the lab extension does for "Open full output": a comm to the kernel's results
  // target, every message it answers with, until the kernel closes it.
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const comm = kernel.createComm('jupyter_toolhost.results');
  const got = [];
  const closed = new Promise(resolve => {
    comm.onMsg = message => { got.push(message.content.data); };
    comm.onClose = () => resolve();
  });
  comm.open(request);
  await closed;
  return got;
}
"""


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    started = time.monotonic()
    with running_hub(
        ("a", "b"),
        environment={"JUPYTER_TOOLHOST_BASH_SANDBOX": "required"},
        log_name="jupyterhub-classroom.log",
    ) as running:
        print(f"hub and both servers up in {time.monotonic() - started:.1f} s")
        yield running


def _lesson(user: HubUser, *cells: str) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = KERNELSPEC
    user.write(LESSON, nbformat.writes(notebook))


@contextlib.contextmanager
def _page(browser: Any, hub: Hub, user: HubUser, name: str) -> Iterator[Any]:
    """A logged-in page of its own (its own cookies) on `user`'s lesson."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(45_000)
    try:
        login(page, hub, user)
        page.goto(hub.lab_url(user, LESSON))
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
            " && window.jupyterapp.shell.currentWidget.context"
            f" && window.jupyterapp.shell.currentWidget.context.path === {json.dumps(LESSON)}"
        )
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"hub-{name}-last.png"), full_page=True)
        context.close()


def _settled(page: Any, cell: Any) -> None:
    page.wait_for_function(IDLE)
    page.wait_for_function(
        "cell => !cell.querySelector('.jp-InputPrompt').innerText.includes('*')",
        arg=cell.element_handle(),
    )


def _tool_results(user: HubUser) -> list[dict[str, Any]]:
    """The tool_result blocks of the last request `user`'s model received."""
    return [
        block
        for block in user.server.requests[-1].body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _sent_key(headers: dict[str, str]) -> str | None:
    """The key a request carried (the client sends it as `x-api-key` or as a bearer token)."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def test_each_kernel_starts_in_its_notebook_folder_and_each_click_reaches_only_its_cell(
    hub: Hub, browser: Any
) -> None:
    a, b = hub.users["a"], hub.users["b"]
    for user, word in ((a, "allowed"), (b, "denied")):
        user.server.add_turns(
            Turn([tool_use("Bash", {"command": f"echo {word} > note.txt"})]),
            Turn([text(f"{user.name}: finished")]),
        )
        _lesson(
            user,
            "%load_ext jupyter_toolhost",
            "import os\nprint('cwd=' + os.getcwd())",
            "%%agent\nWrite a note",
        )
    started = time.monotonic()
    with _page(browser, hub, a, "a") as page_a, _page(browser, hub, b, "b") as page_b:
        run_all(page_a)
        run_all(page_b)
        allow = code_cell(page_a, 2).get_by_role("button", name="Allow", exact=True)
        deny = code_cell(page_b, 2).get_by_role("button", name="Deny", exact=True)
        allow.wait_for()
        deny.wait_for()
        print(f"both prompts shown {time.monotonic() - started:.1f} s after the pages opened")
        for page, user in ((page_a, a), (page_b, b)):
            shown = code_cell(page, 1).inner_text()
            assert f"cwd={user.notebooks / 'course'}" in shown, shown

        allow.click()
        code_cell(page_a, 2).get_by_text(f"{a.name}: finished").wait_for()
        _settled(page_a, code_cell(page_a, 2))
        # A's click decided A's call only: B's prompt still waits, B's model heard nothing.
        page_b.wait_for_timeout(1_000)
        assert deny.is_visible() and deny.is_enabled(), "B's prompt must still wait"
        assert len(b.server.requests) == 1, [r.path for r in b.server.requests]
        assert not (b.notebooks / "course" / "note.txt").exists()

        deny.click()
        code_cell(page_b, 2).get_by_text(f"{b.name}: finished").wait_for()
        _settled(page_b, code_cell(page_b, 2))
        assert "Denied Bash" in code_cell(page_b, 2).inner_text()

    assert (a.notebooks / "course" / "note.txt").read_text() == "allowed\n"
    assert (a.notebooks / "course" / "note.txt").stat().st_uid == a.uid
    assert not (b.notebooks / "course" / "note.txt").exists()
    [allowed] = _tool_results(a)
    assert not allowed.get("is_error"), allowed
    [denied] = _tool_results(b)
    assert denied.get("is_error") is True and "denied" in _result_text(denied).lower()
    # Each kernel sent its own user's key, and only that key, to its own model.
    for user in (a, b):
        keys = {_sent_key(request.headers) for request in user.server.requests}
        assert keys == {user.key}, (user.name, keys)
        assert user.server.errors == [], user.server.errors
