"""The folder trust question in a real kernel: asked in the cell before the first prompt.

A kernel (over jupyter_client) works in a hostile clone whose ``.toolhost/settings.json``
has a UserPromptSubmit hook and an MCP server (the tests' real demo server) whose commands
leave marker files, ``defaultMode: bypassPermissions``, ``allow: ["Bash"]`` and a deny rule.
Clicks are the `comm_msg` a browser sends. Headless runs are a kernel whose front end
renders nothing, and a real nbclient run of a notebook.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import Kernel, agent_kernel
from test_folder_trust import hostile, ran

from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.jupyter.widgets.trust_prompt import DECLINE_LABEL, TRUST_LABEL
from jupyter_toolhost.permissions.settings.trust import TRUST_FILE
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

TOUCH = tool_use("Bash", {"command": "touch made.txt"})


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    return hostile(tmp_path / "clone")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


WAIT = 1.5
"""Seconds the person takes to answer the trust question."""


def start(clone: Path, home: Path, server: MessagesServer, *, renders: bool = True) -> Kernel:
    env = {"HOME": str(home), "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""}
    return agent_kernel(clone, server.base_url, env=env, renders_widgets=renders)


def test_trust_this_folder_applies_its_settings_after_the_click(clone: Path, home: Path) -> None:
    with MessagesServer([Turn([TOUCH]), Turn([text("done")])]) as server:
        kernel = start(clone, home, server)
        try:
            # A command starts the conversation before any cell asked: held back, no question.
            checked = kernel.run("%agent check Bash 'touch made.txt'")
            assert checked.status == "ok" and ran(clone) == [], checked.text()
            assert kernel.run("%agent deny 'Bash(curl:*)'").status == "ok"
            run = kernel.submit("%%agent\ngo")
            [trust] = kernel.wait_for_button(run, TRUST_LABEL)
            kernel.wait(run, timeout=20, until=lambda: any(kernel.html_values(run)))
            question = "\n".join(kernel.html_values(run))
            for shown in ("UserPromptSubmit hook", "MCP server demo", "bypassPermissions"):
                assert shown in question
            assert ran(clone) == [] and server.requests == []  # nothing before the answer
            # The question is a wait for a person: nothing says "running" meanwhile, and
            # its time is not in the cell's run time (the footer's duration).
            asked = time.monotonic()
            while time.monotonic() < asked + WAIT:
                kernel.pump(timeout=0.05)
            assert "running" not in " ".join(str(m["content"]) for m in run.messages)
            kernel.click(trust)
            kernel.wait(run, timeout=60)
            assert run.status == "ok", run.text()
            [footer] = [
                m["content"]["data"][MIME_TYPE]
                for m in run.messages
                if m["msg_type"] == "display_data"
                and m["content"]["data"].get(MIME_TYPE, {}).get("kind") == "footer"
            ]
            assert run.finished_at is not None
            assert footer["duration"] < run.finished_at - asked - WAIT + 0.3, footer
            assert "Trusted the folder" in run.stdout
            assert ran(clone) == ["hook-ran", "server-ran"]
            assert (clone / "made.txt").exists()  # bypassPermissions + allow Bash: no ask
            store = json.loads((home / ".toolhost" / TRUST_FILE).read_text())
            assert store["projects"][str(clone.resolve())]["hasTrustDialogAccepted"] is True
            status = kernel.run("%agent status").text()
            assert "trusted by you" in status
            assert "Bash(curl:*)" in kernel.run("%agent rules").text()  # kept when made again
            # The next conversation in this folder is not asked again.
            server.add_turns(Turn([text("again")]))
            again = kernel.run("%%agent --new\nagain", timeout=60)
            assert kernel.buttons(TRUST_LABEL, again) == [] and "again" in again.text()
            # A pull adds a hook: the next conversation asks again, the new line marked.
            settings = json.loads((clone / ".toolhost/settings.json").read_text())
            pulled = {"type": "command", "command": "touch pulled.txt"}
            settings["hooks"]["UserPromptSubmit"].append({"matcher": "", "hooks": [pulled]})
            (clone / ".toolhost/settings.json").write_text(json.dumps(settings))
            server.add_turns(Turn([text("asked again")]))
            changed = kernel.submit("%%agent --new\nonce more")
            [decline] = kernel.wait_for_button(changed, DECLINE_LABEL)
            kernel.wait(changed, timeout=20, until=lambda: any(kernel.html_values(changed)))
            question = "\n".join(kernel.html_values(changed))
            assert "changed since you trusted it" in question
            assert "touch pulled.txt (.toolhost/settings.json) (new)" in question
            kernel.click(decline)
            kernel.wait(changed, timeout=60)
            assert not (clone / "pulled.txt").exists() and "Held back" in changed.stdout
            assert server.errors == []
        finally:
            kernel.close()


def test_dont_trust_holds_everything_back_and_the_cell_says_so(clone: Path, home: Path) -> None:
    with MessagesServer([Turn([TOUCH]), Turn([text("done")])]) as server:
        kernel = start(clone, home, server)
        try:
            run = kernel.submit("%%agent\ngo")
            [decline] = kernel.wait_for_button(run, DECLINE_LABEL)
            kernel.click(decline)
            [deny] = kernel.wait_for_button(run, "Deny")  # Bash asks: the allow is held back
            kernel.click(deny)
            kernel.wait(run, timeout=60)
            assert run.status == "ok", run.text()
            said = run.stdout
            assert "Not trusted" in said and "Held back" in said
            assert "UserPromptSubmit hook" in said and "MCP server demo" in said
            assert ran(clone) == [] and not (clone / "made.txt").exists()
            assert not (home / ".toolhost" / TRUST_FILE).exists()
            status = kernel.run("%agent status").text()
            assert "not trusted" in status and "held back" in status
            assert "permission mode to bypassPermissions" in status
            assert server.errors == []
        finally:
            kernel.close()


def test_headless_runs_trust_nothing_without_the_flag(clone: Path, home: Path) -> None:
    turns = [Turn([TOUCH]), Turn([text("done")]), Turn([TOUCH]), Turn([text("done")])]
    with MessagesServer(turns) as server:
        kernel = start(clone, home, server, renders=False)
        try:
            run = kernel.run("%%agent\ngo", timeout=60)
            assert run.status == "ok", run.text()
            assert "Not trusted" in run.stdout and "no front end to ask" in run.stdout
            assert ran(clone) == [] and not (clone / "made.txt").exists()
            flagged = kernel.run("%%agent --new --trust-folder\ngo", timeout=60)
            assert flagged.status == "ok", flagged.text()
            assert kernel.buttons(TRUST_LABEL, flagged) == []
            assert ran(clone) == ["hook-ran", "server-ran"] and (clone / "made.txt").exists()
        finally:
            kernel.close()


def test_headless_runs_trust_a_folder_listed_in_the_users_settings(clone: Path, home: Path) -> None:
    (home / ".toolhost").mkdir()
    listed = {"trustedFolders": [str(clone)]}
    (home / ".toolhost" / "settings.json").write_text(json.dumps(listed))
    with MessagesServer([Turn([TOUCH]), Turn([text("done")])]) as server:
        kernel = start(clone, home, server, renders=False)
        try:
            run = kernel.run("%%agent\ngo", timeout=60)
            assert run.status == "ok", run.text()
            assert ran(clone) == ["hook-ran", "server-ran"] and (clone / "made.txt").exists()
        finally:
            kernel.close()


@pytest.fixture
def notebook_env(home: Path, clone: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("HOME", "JUPYTER_TOOLHOST_HOME")}
    os.environ["HOME"] = str(home)
    os.environ["JUPYTER_TOOLHOST_HOME"] = str(clone / ".toolhost")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.mark.parametrize("flag", ["", " --trust-folder"], ids=["no-flag", "flag"])
def test_an_nbclient_run_trusts_only_with_the_flag(
    clone: Path, home: Path, flag: str, notebook_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbclient
    import nbformat

    with MessagesServer([Turn([TOUCH]), Turn([text("done")])]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [
            nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
            nbformat.v4.new_code_cell(f"%%agent{flag}\ngo"),
        ]
        client = nbclient.NotebookClient(
            notebook,
            timeout=60,
            kernel_name="python3",
            resources={"metadata": {"path": str(clone)}},
        )
        client.execute()
    streams = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    if flag:
        assert ran(clone) == ["hook-ran", "server-ran"] and (clone / "made.txt").exists()
    else:
        assert ran(clone) == [] and not (clone / "made.txt").exists()
        assert "Not trusted" in streams and "--trust-folder" in streams
