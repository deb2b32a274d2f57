"""One-click approvals and headless asks in a real kernel over jupyter_client.

The kernel answers a displayed prompt the way a browser's widget manager does when it
renders the view (`Kernel(renders_widgets=True)`); clicks, typed text and Enter are the
`comm_msg` a browser sends. A kernel whose front end renders nothing is what nbclient gives
the agent: its asks must end at once with a deny that names the fix. Every test ends with
the next cell working and a conversation the loopback server accepted (`server.errors`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.jupyter.widgets.approval import FEEDBACK_PLACEHOLDER, ONCE_NOTE, SAVE_LABEL
from jupyter_toolhost.jupyter.widgets.frontend import PROBE_SECONDS
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

HEADLESS = "No front end that shows widgets is connected to this kernel"


def _start(server: MessagesServer, root: Path, *, renders: bool, **env: str) -> Kernel:
    env = {"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": "", **env}
    return agent_kernel(root, server.base_url, env=env, renders_widgets=renders)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("approvals")


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    running = _start(server, root, renders=True)
    try:
        yield running
    finally:
        running.close()


def last_tool_results(server: MessagesServer) -> list[dict[str, Any]]:
    message = server.requests[-1].body["messages"][-1]
    assert message["role"] == "user"
    return [b for b in message["content"] if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else json.dumps(content)


def _healthy(kernel: Kernel, server: MessagesServer) -> None:
    """The next cell works and every request so far was a valid conversation."""
    assert kernel.run("print('next cell')").stdout == "next cell\n"
    assert server.errors == [], server.errors


def _shown(kernel: Kernel, run: CellRun, count: int = 1) -> None:
    """Wait until `run` displayed `count` widget prompts (all their widgets exist then)."""

    def displayed() -> bool:
        views = [
            m
            for m in run.messages
            if m["msg_type"] == "display_data"
            and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        ]
        return len(views) >= count

    kernel.wait(run, timeout=20, until=displayed)


def _pump_for(kernel: Kernel, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        kernel.pump()


def _finishes(kernel: Kernel, run: CellRun, *, within: float) -> float:
    started = time.monotonic()
    kernel.wait(run, timeout=within + 30)
    took = time.monotonic() - started
    assert took < within, f"took {took:.1f} s"
    return took


def test_one_click_on_deny_decides(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]),
        Turn([text("Fine, I will not run it.")]),
    )
    run = kernel.submit("%%agent --new\nRun it")
    [deny] = kernel.wait_for_button(run, "Deny")
    kernel.click(deny)  # one click, no Send
    _finishes(kernel, run, within=10)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert result.get("is_error") is True
    assert "denied" in result_text(result) and "They said" not in result_text(result)
    assert "Denied PythonExec: print('never' + 'ran')" in run.stdout
    assert "neverran" not in run.text() and "Fine, I will not run it." in run.text()
    _healthy(kernel, server)


def test_deny_carries_the_typed_reason(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "import shutil; shutil.rmtree('data')"})]),
        Turn([text("I will archive it instead.")]),
    )
    run = kernel.submit("%%agent --new\nClean the data folder")
    field = kernel.wait_for_text(run, FEEDBACK_PLACEHOLDER)
    [deny] = kernel.buttons("Deny", run)
    kernel.set_value(field, "archive it, do not delete")
    kernel.click(deny)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert result.get("is_error") is True
    assert "They said: archive it, do not delete" in result_text(result)
    assert "Denied PythonExec: import shutil; shutil.rmtree('data') — archive it" in run.stdout
    _healthy(kernel, server)


def test_enter_in_the_reason_box_denies(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "open('log.txt', 'w').close()"})]),
        Turn([text("Leaving the log alone.")]),
    )
    run = kernel.submit("%%agent --new\nTruncate the log")
    field = kernel.wait_for_text(run, FEEDBACK_PLACEHOLDER)
    kernel.set_value(field, "keep the log")
    kernel.press_enter(field)
    kernel.wait(run, timeout=15)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert result.get("is_error") is True and "They said: keep the log" in result_text(result)
    assert "Denied PythonExec" in run.stdout
    _healthy(kernel, server)


def test_typing_alone_does_not_decide(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "typed = 'allowed'"})]), Turn([text("Done.")])
    )
    run = kernel.submit("%%agent --new\nSet a variable")
    field = kernel.wait_for_text(run, FEEDBACK_PLACEHOLDER)
    kernel.set_value(field, "a reason typed, then changed my mind")
    _pump_for(kernel, 1.5)
    assert run.finished_at is None, "typing in the box must not decide"
    [allow] = kernel.buttons("Allow once", run)
    kernel.click(allow)  # a reason left in the box does not turn Allow into a deny
    kernel.wait(run)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert not result.get("is_error"), result_text(result)
    assert kernel.run("print(typed)").stdout == "allowed\n"
    _healthy(kernel, server)


def test_always_allow_adds_a_session_rule(kernel: Kernel, server: MessagesServer, root: Path):
    call = {"code": "tally = globals().get('tally', 0) + 1"}
    server.add_turns(
        Turn([tool_use("PythonExec", call)]),
        Turn([tool_use("PythonExec", call)]),
        Turn([text("Counted twice.")]),
    )
    run = kernel.submit("%%agent --new\nCount twice")
    _shown(kernel, run)
    [always] = kernel.buttons("Always allow", run)
    [header] = [h for h in kernel.html_values(run) if "Always allow adds" in h]
    assert "<code>PythonExec</code> for this session" in header
    assert kernel.checkboxes(SAVE_LABEL, run), "saving is offered as a second choice"
    kernel.click(always)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    assert len(kernel.buttons("Always allow", run)) == 1, "the second call must not ask"
    assert "Allowed PythonExec: tally = globals().get('tally', 0) + 1 (always: PythonExec, " in (
        run.stdout
    )
    assert "this session)" in run.stdout
    assert kernel.run("print(tally)").stdout == "2\n"
    assert not (root / ".toolhost" / "settings.local.json").exists()
    # A new conversation forgets a session rule: it asks again.
    server.add_turns(Turn([tool_use("PythonExec", call)]), Turn([text("Asked again.")]))
    again = kernel.submit("%%agent --new\nCount once more")
    [deny] = kernel.wait_for_button(again, "Deny")
    kernel.click(deny)
    kernel.wait(again)
    assert "Asked again." in again.text()
    _healthy(kernel, server)


def test_always_allow_and_save_writes_the_local_settings(
    kernel: Kernel, server: MessagesServer, root: Path
):
    define = kernel.run(
        "from jupyter_toolhost import tool\n"
        "@tool\n"
        "def stamp(label: str) -> str:\n"
        "    'Stamp a label.'\n"
        "    return 'stamped ' + label\n"
    )
    assert define.status == "ok", define.text()
    server.add_turns(Turn([tool_use("stamp", {"label": "one"})]), Turn([text("Stamped.")]))
    run = kernel.submit("%%agent --new\nStamp one")
    _shown(kernel, run)
    [always] = kernel.buttons("Always allow", run)
    [save] = kernel.checkboxes(SAVE_LABEL, run)
    kernel.set_value(save, True)
    kernel.click(always)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    assert "(always: stamp, saved to .toolhost/settings.local.json)" in run.stdout
    saved = json.loads((root / ".toolhost" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["stamp"]
    assert not (root / ".toolhost" / "settings.json").exists(), "the shared file is left alone"
    # A new conversation reads the local settings: the same call is not asked.
    server.add_turns(Turn([tool_use("stamp", {"label": "two"})]), Turn([text("Stamped again.")]))
    fresh = kernel.run("%%agent --new\nStamp two")
    assert fresh.status == "ok", fresh.text()
    assert not kernel.buttons("Allow once", fresh), "a saved rule must not be asked again"
    [result] = last_tool_results(server)
    assert result_text(result) == "stamped two"
    _healthy(kernel, server)


def test_a_safety_ask_allows_once_and_offers_no_save(
    kernel: Kernel, server: MessagesServer, root: Path
):
    call = {"file_path": ".toolhost/notes.txt", "content": "first\n"}
    server.add_turns(
        Turn([tool_use("Write", call)]),
        Turn([tool_use("Write", {**call, "content": "second\n"})]),
        Turn([text("Wrote it twice.")]),
    )
    run = kernel.submit("%%agent --new\nWrite notes into .toolhost")
    _shown(kernel, run)
    [always] = kernel.buttons("Always allow", run)
    assert any(ONCE_NOTE in h for h in kernel.html_values(run))
    assert not kernel.checkboxes(SAVE_LABEL, run), "no rule may waive a safety ask"
    kernel.click(always)
    second = kernel.wait_for_button(run, "Allow once", count=2)  # asked again: no rule was added
    kernel.click(second[1])
    kernel.wait(run)

    assert run.status == "ok", run.text()
    assert "(once: asked for safety, no rule added)" in run.stdout
    assert (root / ".toolhost" / "notes.txt").read_text() == "second\n"
    local = root / ".toolhost" / "settings.local.json"
    assert not local.exists() or "Write" not in local.read_text()
    _healthy(kernel, server)


# ── a kernel whose front end renders no widgets (what nbclient gives the agent) ─────────


@pytest.fixture
def headless(server: MessagesServer, tmp_path: Path) -> Iterator[Kernel]:
    running = _start(server, tmp_path, renders=False)
    try:
        yield running
    finally:
        running.close()


def test_no_front_end_denies_at_once_with_the_fix(headless: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]),
        Turn([text("I could not run it.")]),
    )
    run = headless.submit("%%agent --new\nRun it")
    took = _finishes(headless, run, within=PROBE_SECONDS + 12)
    print(f"headless ask answered after {took:.2f} s")

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert result.get("is_error") is True
    for fix in (HEADLESS, "dontAsk", "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"):
        assert fix in result_text(result)
    assert "Denied PythonExec" in run.stdout and "(no front end showed it)" in run.stdout
    assert "neverran" not in run.text() and "I could not run it." in run.text()
    # The prompt that nobody saw is closed: its buttons are disabled.
    [deny] = headless.buttons("Deny", run)
    assert any(
        m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == deny
        and m["content"]["data"].get("state", {}).get("disabled") is True
        for m in run.messages
    )
    _healthy(headless, server)


def test_no_front_end_fails_a_question_at_once(headless: Kernel, server: MessagesServer):
    question = {
        "question": "Which file?",
        "header": "File",
        "options": [{"label": "a", "description": "A"}, {"label": "b", "description": "B"}],
    }
    server.add_turns(
        Turn([tool_use("AskUserQuestion", {"questions": [question]})]),
        Turn([text("I will assume a.")]),
    )
    run = headless.submit("%%agent --new\nPick a file")
    _finishes(headless, run, within=PROBE_SECONDS + 12)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert result.get("is_error") is True and HEADLESS in result_text(result)
    assert "Questions not answered (no front end showed them)" in run.stdout
    _healthy(headless, server)


def test_the_widget_control_comm_marks_a_front_end(headless: Kernel, server: MessagesServer):
    """A front end that connects after ipywidgets was imported opens the control comm, as
    JupyterLab's widget manager does: from then on a prompt waits for the click."""
    assert headless.run("import ipywidgets").status == "ok"
    headless.open_widget_control()
    shown = headless.run("from ipywidgets import Widget\nprint(Widget._control_comm is not None)")
    assert shown.stdout == "True\n", shown.text()
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]),
        Turn([text("Not run.")]),
    )
    run = headless.submit("%%agent --new\nRun it")
    [deny] = headless.wait_for_button(run, "Deny")
    _pump_for(headless, PROBE_SECONDS + 1)
    assert run.finished_at is None, "a known front end: the prompt waits for a click"
    headless.click(deny)
    headless.wait(run)
    assert run.status == "ok", run.text()
    assert HEADLESS not in run.stdout and "Denied PythonExec" in run.stdout
    _healthy(headless, server)


def test_an_explicit_timeout_waits_that_long(server: MessagesServer, tmp_path: Path):
    running = _start(server, tmp_path, renders=False, JUPYTER_TOOLHOST_APPROVAL_TIMEOUT="6")
    try:
        server.add_turns(
            Turn([tool_use("PythonExec", {"code": "print(1)"})]), Turn([text("Timed out.")])
        )
        run = running.submit("%%agent --new\nRun it")
        started = time.monotonic()
        running.wait(run, timeout=40)
        took = time.monotonic() - started
        assert 5.5 < took < 30, took  # longer than the probe: the timeout decides
        [result] = last_tool_results(server)
        assert "within 6 s" in result_text(result)
        assert "(no answer within 6.0 s)" in run.stdout
        _healthy(running, server)
    finally:
        running.close()


def test_the_blocking_fallback_denies_at_once(kernel: Kernel, server: MessagesServer):
    """With `%autoawait off` the cell magic blocks the kernel: no click can arrive, so the
    ask is denied at once even though this front end renders widgets."""
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]),
        Turn([text("Not run.")]),
    )
    assert kernel.run("%autoawait off").status == "ok"
    try:
        run = kernel.submit("%%agent --new\nRun it")
        _finishes(kernel, run, within=PROBE_SECONDS + 12)
        assert run.status == "ok", run.text()
        assert "(no front end to ask)" in run.stdout and "neverran" not in run.stdout
        [result] = last_tool_results(server)
        assert HEADLESS in result_text(result)
    finally:
        assert kernel.run("%autoawait on").status == "ok"
    _healthy(kernel, server)
