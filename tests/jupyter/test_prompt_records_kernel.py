"""What a prompt leaves behind, and what a cell says when it cannot run, in a real kernel.

Driven over jupyter_client as a front end would. The widget front end's flow control is
the contract here: after each widget message it sends, it waits for an `idle` status whose
parent is that message before sending the next update of the same widget (see
`jupyter.comm_ack`). A decided prompt's display becomes empty, whatever decided it; a cell
with no key and no cassette says what to do at once, without importing the API client;
a failed run ends in one line unless `%agent debug on`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.jupyter.widgets.approval import FEEDBACK_PLACEHOLDER
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(180)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    root = tmp_path_factory.mktemp("records")
    running = agent_kernel(root, server.base_url, env={"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""})
    try:
        yield running
    finally:
        running.close()


def _send(kernel: Kernel, comm_id: str, data: dict[str, Any]) -> str:
    message = kernel.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    kernel.client.shell_channel.send(message)
    return message["header"]["msg_id"]


def _replies(kernel: Kernel, msg_id: str) -> list[tuple[str, str]]:
    """(msg_type, detail) of every iopub message whose parent is `msg_id`, in order."""
    return [
        (m["msg_type"], m["content"].get("execution_state") or m["content"]["data"]["method"])
        for m in kernel.seen
        if m.get("parent_header", {}).get("msg_id") == msg_id
        and m["msg_type"] in ("status", "comm_msg")
    ]


@pytest.fixture(autouse=True)
def _record_iopub(kernel: Kernel) -> Iterator[None]:
    """Keep every iopub message (kernel_helpers files only a cell's own under the cell)."""
    seen: list[dict[str, Any]] = []
    pump = Kernel.pump

    def recording(self: Kernel, timeout: float = 0.05) -> dict[str, Any] | None:
        message = pump(self, timeout)
        if message is not None:
            seen.append(message)
        return message

    kernel.seen = seen  # type: ignore[attr-defined]
    kernel.pump = recording.__get__(kernel)  # type: ignore[method-assign]
    try:
        yield
    finally:
        del kernel.pump


def test_each_keystroke_is_answered_and_the_decided_prompt_leaves_no_widget(
    kernel: Kernel, server: MessagesServer
) -> None:
    server.add_turns(
        Turn([tool_use("Write", {"file_path": "out.txt", "content": "x\n"})]),
        Turn([text("Fine, notes.md it is.")]),
    )
    run = kernel.submit("%%agent\nWrite out.txt")
    box = kernel.wait_for_text(run, FEEDBACK_PLACEHOLDER)
    [deny] = kernel.buttons("Deny", run)
    typed = "use notes.md instead"
    sent = [
        _send(kernel, box, {"method": "update", "state": {"value": typed[:n]}, "buffer_paths": []})
        for n in (1, 2, 3, len(typed))
    ]
    kernel.wait(
        run, timeout=20, until=lambda: all(("status", "idle") in _replies(kernel, i) for i in sent)
    )
    for msg_id in sent:
        # The new state is echoed, then the idle the front end waits for: once each.
        assert _replies(kernel, msg_id) == [("comm_msg", "echo_update"), ("status", "idle")]
    kernel.click(deny)
    kernel.wait(run, timeout=30)
    assert run.status == "ok", run.text()
    assert f"Denied Write: out.txt — {typed} (by you)" in run.stdout

    [first] = [m for m in run.messages if m["msg_type"] == "display_data" and _is_widget(m)]
    assert first["content"]["data"]["text/plain"] == ""  # not a `VBox(children=...` repr
    display_id = first["content"]["transient"]["display_id"]
    updates = [
        m
        for m in run.messages
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == display_id
    ]
    assert [u["content"]["data"] for u in updates] == [{"text/plain": ""}]

    # After the cell the kernel answers comm messages itself again: one idle, not two.
    after = _send(kernel, box, {"method": "update", "state": {"value": "late"}, "buffer_paths": []})
    kernel.wait(run, timeout=10, until=lambda: ("status", "idle") in _replies(kernel, after))
    time.sleep(0.5)
    while kernel.pump() is not None:
        pass
    assert _replies(kernel, after).count(("status", "idle")) == 1, _replies(kernel, after)


def _is_widget(message: dict[str, Any]) -> bool:
    return WIDGET_VIEW in message["content"]["data"]


def test_an_interrupted_prompt_leaves_no_widget(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(Turn([tool_use("Write", {"file_path": "out.txt", "content": "x\n"})]))
    run = kernel.submit("%%agent\nWrite out.txt again")
    kernel.wait_for_button(run, "Deny")
    kernel.interrupt()
    kernel.wait(run, timeout=30)
    assert "Approval prompt closed (interrupted): Write: out.txt" in run.stdout
    shown = [m for m in run.messages if m["msg_type"] == "display_data" and _is_widget(m)]
    ids = {m["content"]["transient"]["display_id"] for m in shown}
    emptied = {
        m["content"]["transient"]["display_id"]
        for m in run.messages
        if m["msg_type"] == "update_display_data" and m["content"]["data"] == {"text/plain": ""}
    }
    assert ids and ids <= emptied
    kernel.run("%agent reset")


def _no_key_kernel(root: Path, **options: Any) -> Kernel:
    env = {name: "" for name in os.environ if name.startswith("ANTHROPIC_")}
    env.update({"HOME": str(root), "JUPYTER_TOOLHOST_HOME": str(root / ".toolhost")})
    kernel = Kernel(root, env, **options)
    assert kernel.run("%load_ext jupyter_toolhost").status == "ok"
    return kernel


def test_no_key_and_no_cassette_says_what_to_do_at_once(tmp_path: Path) -> None:
    kernel = _no_key_kernel(tmp_path)
    try:
        started = time.monotonic()
        run = kernel.run("%%agent\nSummarise data.csv", timeout=60)
        took = time.monotonic() - started
        print(f"no-key answer in {took:.2f} s")
        assert run.status == "ok" and run.error is None, run.text()
        [message] = run.displays()
        for option in ("%agent key", "%env ANTHROPIC_API_KEY=", "%%agent --cassette FILE"):
            assert option in message
        assert "python -m jupyter_toolhost" in message and "CassetteModel" not in message
        assert "notebooks/" not in message  # not there for a user who installed with pip
        assert "Traceback" not in run.text()
        # Nothing slow ran: the API client was never imported, no session was made.
        probe = kernel.run("import sys; print('anthropic' in sys.modules)")
        assert probe.stdout.strip() == "False"

        # `%agent key` asks without echo, and the next cell has a key.
        msg_id = kernel.client.execute("%agent key", allow_stdin=True)
        request = kernel.client.get_stdin_msg(timeout=30)
        assert request["content"]["password"] is True
        kernel.client.input("sk-ant-typed-in")
        run = CellRun(msg_id)
        kernel.runs[msg_id] = run
        kernel.wait(run)
        assert "set for this kernel" in run.text()
        probe = kernel.run("import os; print(os.environ['ANTHROPIC_API_KEY'])")
        assert probe.stdout.strip() == "sk-ant-typed-in"
    finally:
        kernel.close()


def test_a_failed_run_ends_in_one_line_unless_debug_is_on(
    kernel: Kernel, server: MessagesServer
) -> None:
    server.add_turns(Turn(status=400, error_message="prompt is too long"))
    run = kernel.run("%%agent\nFail once", timeout=60)
    assert run.status == "error" and run.error is not None
    assert len(run.error["traceback"]) == 1, run.error["traceback"]
    assert "prompt is too long" in run.error["traceback"][0]
    assert "%agent debug on" in run.error["traceback"][0]

    assert "Debug on" in kernel.run("%agent debug on").text()
    server.add_turns(Turn(status=400, error_message="prompt is too long"))
    run = kernel.run("%%agent\nFail again", timeout=60)
    assert run.status == "error" and run.error is not None
    assert len(run.error["traceback"]) > 3  # the real one, frames and all
    kernel.run("%agent debug off")
    kernel.run("%agent reset")


def test_overlapping_prompts_keep_answering_until_the_last_one_ends() -> None:
    """Two prompts open at once (calls that run together) and closed in the order they
    opened: the second still gets its widget messages answered, and the kernel's own
    handler is back once both are done. The stand-in has just the kernel's public parts."""
    import asyncio
    from types import SimpleNamespace

    from jupyter_toolhost.jupyter.widgets.comm_ack import acknowledging

    handled: list[str] = []
    published: list[tuple[str, str]] = []

    def original(_stream: Any, _idents: Any, msg: dict[str, Any]) -> None:
        handled.append(msg["header"]["msg_id"])

    def send(_socket: Any, msg_type: str, content: dict[str, Any], **kw: Any) -> None:
        published.append((msg_type, kw["parent"]["header"]["msg_id"]))

    kernel = SimpleNamespace(
        shell_handlers={"comm_msg": original},
        session=SimpleNamespace(send=send),
        iopub_socket=object(),
        ident="k",
    )
    shell = SimpleNamespace(kernel=kernel)
    first, second = acknowledging(shell), acknowledging(shell)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    asyncio.run(kernel.shell_handlers["comm_msg"](None, None, {"header": {"msg_id": "m1"}}))
    assert handled == ["m1"] and published == [("status", "m1")]
    second.__exit__(None, None, None)
    assert kernel.shell_handlers["comm_msg"] is original
