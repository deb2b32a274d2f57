"""The self-approval attack in a real kernel driven over jupyter_client.

The agent writes a script and starts it in the background with Bash; the script looks for
the kernel's connection file (the runtime folder, and the exact path, as `ps` would show
it), connects with jupyter_client, waits for the approval prompt's Allow button on the
broadcast channel and sends the click a browser sends. Then the agent asks PythonExec to
read the secret. Nobody clicks: the prompt must end with no answer, and the secret must not
come back. With the sandbox on, the script cannot even read the file; with it off, its
click arrives from a client that did not run the cell, and the prompt ignores it.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.core.numbers import format_number
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools.bash import sandbox

pytestmark = pytest.mark.timeout(240)

SECRET = "SECRET-kernel-41b7"
WAIT = 15
"""Seconds the prompt waits for a click before it is denied."""

ATTACKER = textwrap.dedent(
    """
    import glob, json, os, sys, time
    known, log = sys.argv[1], sys.argv[2]
    def note(line):
        with open(log, "a") as f:
            f.write(line + "\\n")
    runtime = os.path.expanduser("~/.local/share/jupyter/runtime")
    found = {known, *glob.glob("/root/.local/share/jupyter/runtime/*.json"),
             *glob.glob(runtime + "/*.json")}
    readable = []
    for path in sorted(found):
        try:
            with open(path) as f:
                json.load(f)["key"]
            readable.append(path)
        except Exception as exc:
            note(f"unreadable {type(exc).__name__}")
    note(f"readable {len(readable)}")
    from jupyter_client import BlockingKernelClient
    clients = []
    for path in readable:
        c = BlockingKernelClient()
        c.load_connection_file(path)
        c.start_channels()
        clients.append(c)
    note("ready")
    clicked = set()
    deadline = time.time() + 40
    while time.time() < deadline and clients:
        for c in clients:
            try:
                m = c.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
            if m["msg_type"] != "comm_open":
                continue
            state = m["content"].get("data", {}).get("state", {})
            if state.get("description") == "Allow once" and m["content"]["comm_id"] not in clicked:
                comm = m["content"]["comm_id"]
                data = {"method": "custom", "content": {"event": "click"}}
                c.shell_channel.send(c.session.msg("comm_msg", {"comm_id": comm, "data": data}))
                clicked.add(comm)
                note("clicked Allow")
    note("done")
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text(SECRET)
    (root / "data").mkdir()
    (root / ".toolhost").mkdir()
    settings = {
        "permissions": {
            "deny": ["Read(./secrets/**)"],
            "allow": [f"Bash({sys.executable}:*)", "Bash(sleep:*)"],
        }
    }
    (root / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    return root


def script(known: str) -> list[Turn]:
    log = "data/attack.log"
    command = f"{sys.executable} attacker.py {known} {log}"  # a Python with jupyter_client
    steal = "print(open('secrets/key.txt').read())"
    return [
        Turn([tool_use("Write", {"file_path": "attacker.py", "content": ATTACKER})]),
        Turn([tool_use("Bash", {"command": command, "run_in_background": True})]),
        Turn([tool_use("Bash", {"command": "sleep 6"})]),  # the script connects meanwhile
        Turn([tool_use("PythonExec", {"code": steal})]),
        Turn([text("done")]),
    ]


def results(server: MessagesServer) -> str:
    out: list[str] = []
    for request in server.requests:
        for message in request.body.get("messages", []):
            if isinstance(message.get("content"), list):
                out += [json.dumps(b) for b in message["content"] if b.get("type") == "tool_result"]
    return "\n".join(out)


def attack(project: Path, sandbox_setting: str) -> tuple[str, str, Any]:
    holder: dict[str, Any] = {}

    def turns(body: dict[str, Any]) -> Turn:
        return holder["turns"].pop(0)

    with MessagesServer(turns) as server:
        env = {"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": str(WAIT), sandbox.SANDBOX_ENV: sandbox_setting}
        kernel: Kernel = agent_kernel(project, server.base_url, env=env)
        try:
            known = kernel.manager.connection_file
            assert os.path.isfile(known)
            holder["turns"] = script(known)
            run = kernel.submit("%%agent --mode acceptEdits\ngo")
            # The person allows running the script (a program the engine can't name for
            # sure asks); what is under attack is the prompt after it, for PythonExec.
            kernel.click(kernel.wait_for_button(run, "Allow once", timeout=120)[0])
            kernel.wait(run, timeout=180)
            assert run.status == "ok", run.text()
            shown = run.text()
        finally:
            kernel.close()
        return results(server), shown, server.errors


def test_a_sandboxed_script_cannot_approve_its_own_prompt(project: Path) -> None:
    if sandbox.bwrap_problem()[1] is not None and os.environ.get("CI") != "true":
        pytest.skip("no usable bubblewrap here")
    found, shown, errors = attack(project, "1")
    assert errors == []
    assert SECRET not in found and SECRET not in shown
    assert f"no answer within {format_number(WAIT, 'seconds')}" in shown
    log = (project / "data" / "attack.log").read_text()
    assert "readable 0" in log and "clicked" not in log, log


def test_a_click_from_another_client_is_ignored(project: Path) -> None:
    """Without the sandbox the script reads the key and clicks; the prompt only takes a
    click from the client whose cell asked."""
    found, shown, errors = attack(project, "0")
    assert errors == []
    log = (project / "data" / "attack.log").read_text()
    assert "clicked Allow" in log, log  # the forged click was really sent
    assert SECRET not in found and SECRET not in shown
    assert f"no answer within {format_number(WAIT, 'seconds')}" in shown
