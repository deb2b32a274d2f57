"""Checkpoints and undo in a real kernel over jupyter_client, with the real file tools, the
real `anthropic` client and the loopback Messages API: `%agent undo` confirmed by a click,
by `--yes` where nobody clicks, the footer's button, history, the model's note, an
interrupted cell and a resumed session."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.jupyter.magic.undo import (
    CANCEL_LABEL,
    FOOTER_LABEL,
    FORCE_LABEL,
    UNDO_LABEL,
)
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(180)

WRITES = "%%agent --new --mode acceptEdits\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("undo")


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    running = agent_kernel(root, server.base_url, env={"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""})
    try:
        yield running
    finally:
        running.close()


def _agent_writes(kernel: Kernel, server: MessagesServer, cell: str, *calls: Any) -> CellRun:
    server.add_turns(Turn(list(calls)), Turn([text("Done.")]))
    run = kernel.run(cell, timeout=60)
    assert run.status == "ok", run.text()
    assert server.errors == [], server.errors
    return run


def _pump_until(kernel: Kernel, until: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until():
            return
        kernel.pump()
    raise AssertionError("timed out")


def test_undo_after_a_click_restores_the_files_and_the_model_is_told(
    kernel: Kernel, server: MessagesServer, root: Path
):
    (root / "a.txt").write_text("one\n")
    _agent_writes(
        kernel,
        server,
        WRITES + "Change a.txt and make new.txt",
        tool_use("Read", {"file_path": "a.txt"}),
        tool_use("Write", {"file_path": "a.txt", "content": "two\n"}, id="toolu_w1"),
        tool_use("Write", {"file_path": "new.txt", "content": "made\n"}, id="toolu_w2"),
    )
    assert (root / "a.txt").read_text() == "two\n"

    history = kernel.run("%agent history")
    assert "checkpoints (%agent undo N)" in history.text()
    assert "Change a.txt and make new.txt" in history.text() and "kept" in history.text()

    run = kernel.submit("%agent undo")
    [undo] = kernel.wait_for_button(run, UNDO_LABEL)
    assert "-two" in run.text() and "+one" in run.text()  # the diff is shown before the click
    assert (root / "a.txt").read_text() == "two\n"
    kernel.click(undo)
    kernel.wait(run, timeout=20)
    assert run.status == "ok", run.text()
    assert (root / "a.txt").read_text() == "one\n"
    assert not (root / "new.txt").exists()
    assert "a.txt: restored" in run.text() and "checkpoint 2" in run.text()

    server.add_turns(Turn([text("Noted.")]))
    kernel.run("%%agent\nWhat now?", timeout=60)
    sent = server.requests[-1].body["messages"][-1]
    notes = [b["text"] for b in sent["content"] if b.get("type") == "text"]
    assert any("The person undid checkpoint 1" in n and "a.txt" in n for n in notes), notes
    assert server.errors == []

    history = kernel.run("%agent history").text()
    assert "undone (2)" in history and "undo of 1" in history


def test_cancel_restores_nothing(kernel: Kernel, server: MessagesServer, root: Path):
    _agent_writes(
        kernel,
        server,
        WRITES + "Make c.txt",
        tool_use("Write", {"file_path": "c.txt", "content": "c\n"}),
    )
    run = kernel.submit("%agent undo")
    [cancel] = kernel.wait_for_button(run, CANCEL_LABEL)
    kernel.click(cancel)
    kernel.wait(run, timeout=20)
    assert "Cancelled: nothing was restored." in run.text()
    assert (root / "c.txt").read_text() == "c\n"


def test_a_file_changed_since_asks_again_and_the_person_version_is_kept(
    kernel: Kernel, server: MessagesServer, root: Path
):
    (root / "b.txt").write_text("before\n")
    _agent_writes(
        kernel,
        server,
        WRITES + "Change b.txt",
        tool_use("Read", {"file_path": "b.txt"}),
        tool_use("Write", {"file_path": "b.txt", "content": "agent\n"}, id="toolu_b"),
    )
    (root / "b.txt").write_text("person\n")

    quiet = kernel.run("%agent undo --yes")  # --yes alone never overwrites a changed file
    assert "b.txt: not restored (changed since the agent wrote it" in quiet.text()
    assert (root / "b.txt").read_text() == "person\n"

    run = kernel.submit("%agent undo")
    kernel.click(kernel.wait_for_button(run, UNDO_LABEL)[0])
    [force] = kernel.wait_for_button(run, FORCE_LABEL)
    assert (root / "b.txt").read_text() == "person\n"
    kernel.click(force)
    kernel.wait(run, timeout=20)
    assert (root / "b.txt").read_text() == "before\n", run.text()

    number = run.text().split("kept as checkpoint ")[1].split(":")[0]
    kernel.run(f"%agent undo {number} --yes")
    assert (root / "b.txt").read_text() == "person\n"  # nothing was lost


def test_two_cells_on_one_file_and_undo_twice(kernel: Kernel, server: MessagesServer, root: Path):
    _agent_writes(
        kernel,
        server,
        WRITES + "First",
        tool_use("Write", {"file_path": "t.txt", "content": "1\n"}),
    )
    server.add_turns(
        Turn([tool_use("Read", {"file_path": "t.txt"})]),
        Turn([tool_use("Write", {"file_path": "t.txt", "content": "2\n"})]),
        Turn([text("Done.")]),
    )
    assert kernel.run("%%agent\nSecond", timeout=60).status == "ok"
    assert (root / "t.txt").read_text() == "2\n"

    kernel.run("%agent undo --yes")
    assert (root / "t.txt").read_text() == "1\n"  # the state before the second cell only
    kernel.run("%agent undo --yes")
    assert not (root / "t.txt").exists()


def test_an_interrupted_cell_keeps_its_checkpoint(
    kernel: Kernel, server: MessagesServer, root: Path
):
    (root / "i.txt").write_text("safe\n")
    server.add_turns(
        Turn([tool_use("Read", {"file_path": "i.txt"})]),
        Turn([tool_use("Write", {"file_path": "i.txt", "content": "half\n"})]),
        Turn([tool_use("PythonExec", {"code": "print(1)"})]),  # asks: the cell waits
    )
    run = kernel.submit("%%agent --new --mode acceptEdits\nEdit then run")
    kernel.wait_for_button(run, "Deny", timeout=40)
    assert (root / "i.txt").read_text() == "half\n"
    kernel.interrupt()
    kernel.wait(run, timeout=20)
    assert run.status == "error"

    undo = kernel.run("%agent undo --yes")
    assert "i.txt: restored" in undo.text(), undo.text()
    assert (root / "i.txt").read_text() == "safe\n"
    server.requests.clear()
    server.errors.clear()


def test_the_footer_button_undoes_the_cell(kernel: Kernel, server: MessagesServer, root: Path):
    # The button shows where a widget front end is known to be there: JupyterLab's widget
    # manager opens its control comm (or a prompt it rendered said so).
    assert kernel.run("import ipywidgets").status == "ok"
    kernel.open_widget_control()
    run = _agent_writes(
        kernel,
        server,
        WRITES + "Make f.txt",
        tool_use("Write", {"file_path": "f.txt", "content": "footer\n"}),
    )
    assert kernel.buttons(FOOTER_LABEL, run), run.text()
    [footer] = kernel.buttons(FOOTER_LABEL, run)
    before = set(kernel.buttons(UNDO_LABEL))
    kernel.click(footer)  # the cell has ended: the undo runs in a task of its own
    _pump_until(kernel, lambda: set(kernel.buttons(UNDO_LABEL)) - before)
    [confirm] = set(kernel.buttons(UNDO_LABEL)) - before
    assert (root / "f.txt").exists()
    kernel.click(confirm)

    def outputs() -> list[str]:
        return [
            str(state.get("outputs"))
            for state in kernel.widgets.values()
            if state.get("_model_name") == "OutputModel"
        ]

    _pump_until(kernel, lambda: any("f.txt: restored" in o for o in outputs()))
    assert not (root / "f.txt").exists()
    assert any("-footer" in o for o in outputs())  # the diff was shown in the footer too
    assert kernel.run("print('next')").stdout == "next\n"


def test_headless_undo_never_waits_and_needs_yes(server: MessagesServer, tmp_path: Path):
    headless = agent_kernel(
        tmp_path,
        server.base_url,
        env={"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""},
        renders_widgets=False,
    )
    try:
        server.add_turns(
            Turn([tool_use("Write", {"file_path": "h.txt", "content": "h\n"})]),
            Turn([text("Done.")]),
        )
        made = headless.run(WRITES + "Make h.txt", timeout=60)
        assert made.status == "ok", made.text()
        assert not headless.buttons(FOOTER_LABEL, made)  # nbval's outputs stay as they were
        started = time.monotonic()
        run = headless.run("%agent undo", timeout=30)
        assert time.monotonic() - started < 15
        assert "Nobody could confirm the undo" in run.text() and "--yes" in run.text()
        assert (tmp_path / "h.txt").exists()

        # After a kernel restart the session's checkpoints are still on disk: resumed, they undo.
        session = headless.run("%agent status").text().split("session")[1].split()[0]
        headless.close()
        headless = agent_kernel(tmp_path, server.base_url, renders_widgets=False)
        resumed = headless.run(f"%agent resume {session}")
        assert resumed.status == "ok", resumed.text()
        assert "h.txt: restored" in headless.run("%agent undo --yes").text()
        assert not (tmp_path / "h.txt").exists()
    finally:
        headless.close()
