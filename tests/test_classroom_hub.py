"""Two students on one real JupyterHub, each their own system user, in Debian's Chromium.

`tests/hub_helpers.py` starts the hub (PAM login, `LocalProcessSpawner`, the npm proxy) with
two freshly created system users, each with a key of their own and a scripted loopback
Messages API server of their own. Both log in, open a notebook in a subfolder of their
notebook folder, and run `%%agent` cells at the same time, with the Bash sandbox required
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
4. The hub's policy (a root-owned file the spawner names in the environment) holds for
   both: a cell asking for bypassPermissions is refused with the policy's file named and
   nothing sent, `%agent status` shows it, and a cell whose model loops on a tool stops at
   the policy's token budget, every tool call answered, with the cap and who raises it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_helpers import Hub, HubUser, login, require_hub, run_as, running_hub
from lab_browser import ARTIFACTS, IDLE, code_cell, notebook_of, require_browser, run_all

from jupyter_toolhost.permissions.settings.managed import ENV
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


POLICY = {
    "permissions": {"disableBypassPermissionsMode": "disable"},
    "budgets": {"cellTokens": 150_000},
}
"""The hub's policy: no student may turn the checks off, and a cell reads at most 150,000
tokens (a first request here is about 15,000; each looping step below adds about 11,000)."""


@pytest.fixture(scope="module")
def policy_file() -> Iterator[Path]:
    """A root-owned policy file every student can read and none can write."""
    folder = Path(tempfile.mkdtemp(prefix="toolhost-policy-"))
    folder.chmod(0o755)
    path = folder / "managed-settings.json"
    try:
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def hub(policy_file: Path) -> Iterator[Hub]:
    started = time.monotonic()
    with running_hub(
        ("a", "b"),
        environment={"JUPYTER_TOOLHOST_BASH_SANDBOX": "required", ENV: str(policy_file)},
        root_files={policy_file: json.dumps(POLICY)},
        log_name="jupyterhub-classroom.log",
    ) as running:
        print(f"hub and both servers up in {time.monotonic() - started:.1f} s")
        yield running


def _lesson(user: HubUser, *cells: str) -> None:
    import nbformat

    user.write(LESSON, nbformat.writes(notebook_of(*cells)))


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
        allow = code_cell(page_a, 2).get_by_role("button", name="Allow once", exact=True)
        deny = code_cell(page_b, 2).get_by_role("button", name="Deny", exact=True)
        allow.wait_for()
        deny.wait_for()
        print(f"both prompts shown {time.monotonic() - started:.1f} s after the pages opened")
        for page, user in ((page_a, a), (page_b, b)):
            shown = code_cell(page, 1).inner_text()
            assert f"cwd={user.notebooks / 'course'}" in shown, shown

        allow.click()
        code_cell(page_a, 2).get_by_text(f"{a.name}: finished", exact=True).wait_for()
        _settled(page_a, code_cell(page_a, 2))
        # A's click decided A's call only: B's prompt still waits, B's model heard nothing.
        page_b.wait_for_timeout(1_000)
        assert deny.is_visible() and deny.is_enabled(), "B's prompt must still wait"
        assert len(b.server.requests) == 1, [r.path for r in b.server.requests]
        assert not (b.notebooks / "course" / "note.txt").exists()

        deny.click()
        code_cell(page_b, 2).get_by_text(f"{b.name}: finished", exact=True).wait_for()
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
        keys = {request.api_key for request in user.server.requests}
        assert keys == {user.key}, (user.name, keys)
        assert user.server.errors == [], user.server.errors


def _saved_state(user: HubUser) -> list[Path]:
    """Every file and folder under `user`'s project `.toolhost/` and `~/.toolhost/`."""
    found: list[Path] = []
    for top in (user.notebooks / "course" / ".toolhost", user.home / ".toolhost"):
        if top.exists():
            found += [top, *sorted(top.rglob("*"))]
    return found


def _readable_by(other: HubUser, paths: list[Path]) -> list[str]:
    """The paths `other` can read (a file) or list (a folder), tried as that system user."""
    script = (
        'for p; do if [ -d "$p" ]; then ls "$p"; else cat "$p"; fi >/dev/null 2>&1'
        ' && echo "$p"; done'
    )
    done = run_as(other.name, ["sh", "-c", script, "sh", *map(str, paths)])
    return done.stdout.split()


def _allow_until(page: Any, cell: Any, final: str) -> int:
    """Click Allow on each prompt `cell` shows until `final` appears; the clicks made."""
    clicks = 0
    deadline = time.monotonic() + 90
    while not cell.get_by_text(final, exact=True).is_visible():
        assert time.monotonic() < deadline, cell.inner_text()
        allow = cell.get_by_role("button", name="Allow once", exact=True)
        if allow.count() and allow.first.is_enabled():
            allow.first.click()
            clicks += 1
        page.wait_for_timeout(200)
    _settled(page, cell)
    return clicks


def test_another_users_saved_state_is_out_of_reach_of_a_students_agent(
    hub: Hub, browser: Any
) -> None:
    a, b = hub.users["a"], hub.users["b"]
    project_b = b.notebooks / "course"
    # B's own kernel saves B's state, under the default umask: a result too big to send
    # whole, a checkpoint (Write), a recorded cassette, project and user settings.
    b.server.add_turns(
        Turn(
            [
                tool_use("Write", {"file_path": "plan.md", "content": "B's plan\n"}),
                tool_use("Bash", {"command": "seq 1 20000"}),
            ]
        ),
        Turn([text("B saved")]),
    )
    _lesson(
        b,
        "%load_ext jupyter_toolhost",
        "%%agent --new --mode acceptEdits --cassette .toolhost/cassettes/lesson.json"
        " --cassette-mode record\nPlan and count",
        "from jupyter_toolhost.permissions.settings.settings import save_rule\n"
        "print(save_rule('Bash(seq:*)', scope='user', cwd='.'))\n"
        "print(save_rule('Read(./plan.md)', scope='project', cwd='.'))",
    )
    with _page(browser, hub, b, "b-state") as page_b:
        run_all(page_b)
        code_cell(page_b, 1).get_by_text("B saved", exact=True).wait_for()
        page_b.wait_for_function(IDLE)
        code_cell(page_b, 2).get_by_text("settings.json").first.wait_for()
        _settled(page_b, code_cell(page_b, 2))
    state = _saved_state(b)
    [result] = [p for p in state if p.parent.name == "tool-results" and p.is_file()]
    [cassette] = [p for p in state if p.name == "lesson.json"]
    checkpoints = [p for p in state if "checkpoints" in p.parts and p.is_file()]
    user_settings = b.home / ".toolhost" / "settings.json"
    assert checkpoints and user_settings in state and project_b / ".toolhost/settings.json" in state
    modes = {str(p.relative_to(b.home)): oct(stat.S_IMODE(p.stat().st_mode)) for p in state}
    print("B's saved state:", json.dumps(modes, indent=1))
    # The operating system itself keeps A out: nothing is readable or listable as A.
    assert _readable_by(a, state) == []
    before = {p: p.read_bytes() for p in state if p.is_file()}

    # A's agent is asked to read and change B's files through Read and Bash (in the
    # sandbox), and A allows every call it asks for; then it saves a result of its own.
    a.server.add_turns(
        Turn(
            [
                tool_use("Read", {"file_path": str(result)}),
                tool_use("Read", {"file_path": str(user_settings)}),
            ]
        ),
        Turn(
            [
                tool_use(
                    "Bash",
                    {
                        "command": f"cat {result} {cassette}; ls {project_b / '.toolhost'}; "
                        f"echo '{{}}' > {user_settings}"
                    },
                )
            ]
        ),
        Turn([tool_use("Bash", {"command": "seq 1 20000"})]),
        Turn([text("A done")]),
    )
    _lesson(a, "%load_ext jupyter_toolhost", "%%agent\nRead what B saved")
    earlier = len(a.server.requests)
    with _page(browser, hub, a, "a-reads-b") as page_a:
        run_all(page_a)
        _allow_until(page_a, code_cell(page_a, 1), "A done")
        # The results comm, as the lab extension opens it: B's result, then a link to it
        # from A's own results folder, then the list, then A's own result.
        asked = {"offset": 0, "limit": 4_000_000, "encoding": "base64"}
        to_b = page_a.evaluate(RESULTS_COMM, {**asked, "path": str(result)})
        [mine] = [p for p in a.notebooks.rglob("tool-results/*") if p.is_file()]
        link = mine.parent / "link-to-b.txt"
        run_as(a.name, ["ln", "-s", str(result), str(link)])
        through_link = page_a.evaluate(RESULTS_COMM, {**asked, "path": str(link)})
        listed = page_a.evaluate(RESULTS_COMM, {"list": True})
        own = page_a.evaluate(RESULTS_COMM, {**asked, "path": str(mine)})

    requests = [r.body for r in a.server.requests[earlier:] if r.path == "/v1/messages"]

    def results_of(turn: int) -> list[dict[str, Any]]:
        last = requests[turn]["messages"][-1]["content"]
        return [x for x in last if isinstance(x, dict) and x.get("type") == "tool_result"]

    read_result, read_settings = results_of(1)
    for block, path in ((read_result, result), (read_settings, user_settings)):
        assert block.get("is_error") is True, block
        assert f"Permission denied: cannot read {path}" in _result_text(block), block
    [bash] = results_of(2)
    shown = _result_text(bash)
    assert shown.count("Permission denied") >= 3, shown
    assert "19999" not in shown and "Bash(seq" not in shown, shown
    for answer, path in ((to_b, result), (through_link, link)):
        [refusal] = answer
        assert refusal["ok"] is False, refusal
        assert str(path) in refusal["error"] and "saved tool result" in refusal["error"], refusal
    [catalogue] = listed
    assert [r["path"] for r in catalogue["results"]] == [str(mine)], catalogue
    assert own[0]["ok"] is True and own[0]["size"] == mine.stat().st_size, own[0]
    # Nothing of B's changed.
    assert {p: p.read_bytes() for p in state if p.is_file()} == before


def test_the_hubs_policy_holds_for_both_and_a_budget_stops_a_looping_cell(
    hub: Hub, browser: Any, policy_file: Path
) -> None:
    a, b = hub.users["a"], hub.users["b"]
    a.server.add_turns(
        *[Turn([tool_use("Bash", {"command": "seq 1 9000"})]) for _ in range(12)],
        Turn([text("A looped to the end")]),
    )
    for user in (a, b):
        _lesson(
            user,
            "%load_ext jupyter_toolhost",
            "%agent status",
            *(["%%agent --new\nCount again and again"] if user is a else []),
            # last: Run All stops at a cell's error, as it should
            "%%agent --new --mode bypassPermissions\nDo anything at all",
        )
    sent = {user.name: len(user.server.requests) for user in (a, b)}
    with _page(browser, hub, a, "a-policy") as page_a, _page(browser, hub, b, "b-policy") as page_b:
        run_all(page_a)
        run_all(page_b)
        loop = code_cell(page_a, 2)
        deadline = time.monotonic() + 120
        while not loop.get_by_text("Budget reached", exact=False).count():
            assert time.monotonic() < deadline, loop.inner_text()
            allow = loop.get_by_role("button", name="Allow once", exact=True)
            if allow.count() and allow.first.is_enabled():
                allow.first.click()
            page_a.wait_for_timeout(300)
        _settled(page_a, loop)
        shown = loop.inner_text()
        for page, last in ((page_a, 3), (page_b, 2)):
            status = code_cell(page, 1)
            status.scroll_into_view_if_needed()  # JupyterLab may draw only the cells in view
            status.get_by_text(f"policy in force: {policy_file}").wait_for()
            assert "cellTokens 150000" in status.inner_text()
            refused = code_cell(page, last)
            refused.scroll_into_view_if_needed()
            refused.get_by_text("forbids the bypassPermissions mode").wait_for()
            assert str(policy_file) in refused.inner_text()
    assert "Budget reached: cellTokens 150,000 tokens for this cell" in shown, shown
    assert "stop: Budget reached: cellTokens 150,000 tokens for this cell" in shown  # footer
    assert f"set by the policy in {policy_file}" in shown and "ask whoever runs" in shown
    assert "A looped to the end" not in shown
    requests = [r.body for r in a.server.requests[sent[a.name] :] if r.path == "/v1/messages"]
    assert 2 <= len(requests) < 13, len(requests)
    assert len(b.server.requests) == sent[b.name]  # B's refused cell sent nothing
    last = requests[-1]["messages"]
    uses = [
        x["id"]
        for m in last
        for x in m["content"]
        if isinstance(x, dict) and x.get("type") == "tool_use"
    ]
    answered = [
        x["tool_use_id"]
        for m in last
        if isinstance(m["content"], list)
        for x in m["content"]
        if isinstance(x, dict) and x.get("type") == "tool_result"
    ]
    assert set(uses) - set(answered) <= {uses[-1]}  # the last call's result was never sent on
    assert a.server.errors == [] and b.server.errors == []
