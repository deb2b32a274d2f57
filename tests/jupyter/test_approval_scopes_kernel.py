"""Approval scopes and edit-then-allow in a real kernel over jupyter_client.

"Allow for this cell" holds for the rest of the cell and no longer; "Edit" runs the call
as the person changed it, tells the model what changed, and still obeys the deny rules;
a long input is shown whole before anything is decided. Clicks and typing are the
`comm_msg`s a browser sends (the keys themselves are tried in Chromium, in
`test_approval_keys_browser.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.jupyter.widgets.approval import EDIT_LABEL, EDITED_LABEL
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scopes")
    (folder / ".toolhost").mkdir()
    (folder / ".toolhost" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}})
    )
    return folder


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    env = {"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": "", "JUPYTER_TOOLHOST_BASH_SANDBOX": "0"}
    running = agent_kernel(root, server.base_url, env=env, renders_widgets=True)
    try:
        yield running
    finally:
        running.close()


def textarea(kernel: Kernel, run: Any, field: str) -> str:
    """The Edit box of `field`, once the prompt's widgets have all arrived."""
    kernel.wait(run, timeout=20, until=lambda: bool(kernel.textareas(field, run)))
    [found] = kernel.textareas(field, run)
    return found


def last_user_blocks(server: MessagesServer) -> list[dict[str, Any]]:
    message = server.requests[-1].body["messages"][-1]
    assert message["role"] == "user"
    return message["content"]


def test_allow_for_this_cell_holds_until_the_cell_ends(kernel: Kernel, server: MessagesServer):
    call = {"code": "count = globals().get('count', 0) + 1"}
    server.add_turns(
        Turn([tool_use("PythonExec", call)]),
        Turn([tool_use("PythonExec", call)]),
        Turn([text("Twice.")]),
    )
    run = kernel.submit("%%agent --new\nCount twice")
    [cell] = kernel.wait_for_button(run, "Allow for this cell")
    kernel.click(cell)
    kernel.wait(run)
    assert run.status == "ok", run.text()
    assert len(kernel.buttons("Allow for this cell", run)) == 1, "the second call must not ask"
    assert "(for this cell: PythonExec)" in run.stdout
    assert kernel.run("print(count)").stdout == "2\n"

    server.add_turns(Turn([tool_use("PythonExec", call)]), Turn([text("Asked.")]))
    again = kernel.submit("%%agent\nCount once more")  # the same conversation, a new cell
    [deny] = kernel.wait_for_button(again, "Deny")
    kernel.click(deny)
    kernel.wait(again)
    assert kernel.run("print(count)").stdout == "2\n"
    assert server.errors == []


def test_edit_runs_the_call_as_changed_and_tells_the_model(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "edited = 'as the model wrote it'"})]),
        Turn([text("Done.")]),
    )
    run = kernel.submit("%%agent --new\nSet a variable")
    [edit] = kernel.wait_for_button(run, EDIT_LABEL)
    kernel.click(edit)
    code = textarea(kernel, run, "code")
    kernel.set_value(code, "edited = 'as the person changed it'")
    [allow] = kernel.wait_for_button(run, EDITED_LABEL)
    kernel.click(allow)
    kernel.wait(run)
    assert run.status == "ok", run.text()
    assert kernel.run("print(edited)").stdout == "as the person changed it\n"
    assert "(once, as you edited it)" in run.stdout
    blocks = last_user_blocks(server)
    told = [b["text"] for b in blocks if b.get("type") == "text"]
    assert any("The person edited this PythonExec call's input" in t for t in told), blocks
    assert any("\"edited = 'as the person changed it'\"" in t for t in told), told
    # the conversation's tool_use keeps what the model wrote; the result follows the edit
    assert server.errors == []


def test_an_edit_into_a_denied_command_is_denied(
    kernel: Kernel, server: MessagesServer, root: Path
):
    (root / "precious.txt").write_text("keep me\n")
    server.add_turns(Turn([tool_use("Bash", {"command": "touch made.txt"})]), Turn([text("Done.")]))
    run = kernel.submit("%%agent --new\nMake a file")
    [edit] = kernel.wait_for_button(run, EDIT_LABEL)
    kernel.click(edit)
    command = textarea(kernel, run, "command")
    kernel.set_value(command, "rm -f precious.txt")
    kernel.click(kernel.wait_for_button(run, EDITED_LABEL)[0])
    kernel.wait(run)
    assert (root / "precious.txt").read_text() == "keep me\n"
    [result] = [b for b in last_user_blocks(server) if b.get("type") == "tool_result"]
    assert result.get("is_error") is True
    assert "the edited call is denied" in json.dumps(result["content"])
    assert server.errors == []


def test_an_edit_that_is_not_valid_json_sends_nothing(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("Bash", {"command": "echo hi > hi.txt", "timeout": 5000})]),
        Turn([text("Done.")]),
    )
    run = kernel.submit("%%agent --new\nWrite hi")
    [edit] = kernel.wait_for_button(run, EDIT_LABEL)
    kernel.click(edit)
    timeout = textarea(kernel, run, "timeout")
    kernel.set_value(timeout, "five seconds")
    kernel.click(kernel.wait_for_button(run, EDITED_LABEL)[0])
    kernel.wait(
        run,
        timeout=15,
        until=lambda: any("timeout is not valid JSON" in h for h in kernel.html_values(run)),
    )
    assert run.finished_at is None, "a bad edit must not decide"
    kernel.set_value(timeout, "6000")
    kernel.click(kernel.wait_for_button(run, EDITED_LABEL)[0])
    kernel.wait(run)
    assert run.status == "ok", run.text()
    told = [b.get("text", "") for b in last_user_blocks(server) if b.get("type") == "text"]
    assert any("timeout: 5000 → 6000" in t for t in told), told


def test_a_long_input_is_shown_whole_before_deciding(kernel: Kernel, server: MessagesServer):
    lines = [f"line_{i} = {i}" for i in range(120)]
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "\n".join(lines)})]), Turn([text("Done.")])
    )
    run = kernel.submit("%%agent --new\nA long cell")
    [deny] = kernel.wait_for_button(run, "Deny")
    kernel.wait(run, timeout=20, until=lambda: any("line_0" in h for h in kernel.html_values(run)))
    header = next(h for h in kernel.html_values(run) if "line_0" in h)
    assert all(line in header for line in lines), "every line is in the prompt"
    assert "<details" not in header and "120 lines (all shown; scroll)" in header
    kernel.click(deny)
    kernel.wait(run)
