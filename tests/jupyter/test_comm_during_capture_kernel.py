"""Widget messages that arrive while a cell runs, in every phase of a prompt and a PythonExec
run, leave no traceback anywhere.

ipykernel 7 handles a `comm_msg` beside an awaiting cell, and first tells the shell's display
publisher, display hook and streams which message is the parent of what they print
(`set_parent`). PythonExec swaps some of those objects while it captures what the code
shows, so a swapped object that lacks part of the kernel's interface drops the message with
"Uncaught exception in ZMQStream callback", and the traceback lands in the cell (seen in
JupyterLab about 60 ms after a click on Allow, when the front end sends the view count of
the widgets it drew).

Here a front end that keeps talking is imitated: while the cell runs, every widget it has
opened gets a `_view_count` update and the widget control comm is asked for its states,
again and again: before the request, while the answer streams, while the prompt is shown,
right after each click, while the approved code runs, prints and displays (the capture in
place), and while the footer is shown; each phase is checked to have had its messages.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(300)

CLICKS = 50
CODES = (
    # Code that blocks: the kernel's loop handles nothing until it ends.
    "import time\nfor step in range(3):\n    print('step', step)\n    time.sleep(0.05)\n",
    # Code that awaits (top-level await, as in a cell): comm messages are handled meanwhile,
    # while the capture is in place.
    "import asyncio\nfor step in range(3):\n"
    "    print('step', step)\n    await asyncio.sleep(0.1)\n",
)
GAP = 0.03
TRACE_MARKS = ("Traceback", "Uncaught exception", "set_parent", "AttributeError")


@pytest.fixture
def kernel(server: MessagesServer, tmp_path: Path) -> Iterator[Kernel]:
    running = agent_kernel(tmp_path, server.base_url, env={"JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": ""})
    try:
        yield running
    finally:
        running.close()


class Chatter:
    """The comm messages of a busy front end, sent between the test's own steps."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.control = kernel.open_widget_control()
        self.sent = 0
        self._last = 0.0

    def burst(self, run: CellRun) -> None:
        """A few messages, at most every `GAP` seconds: a drawing front end's pace, not a
        flood that would queue the kernel's shell channel behind thousands of updates."""
        if time.monotonic() - self._last < GAP:
            return
        self._last = time.monotonic()
        opened = [m["content"]["comm_id"] for m in run.messages if m["msg_type"] == "comm_open"]
        for comm_id in opened[-6:]:
            # A view drawn again (1 -> 2 -> 1): never 0, which would say the prompt is gone.
            self.kernel.set_state(comm_id, {"_view_count": 1 + self.sent % 2})
            self.sent += 1
        self.kernel.send_comm(self.control, {"method": "request_states"})
        self.sent += 1

    def pump_while(self, run: CellRun, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.burst(run)
            self.kernel.pump(timeout=0.01)


def every_text(kernel: Kernel) -> str:
    """Every text the kernel published (streams, displays, errors), whatever message it
    names as its parent: a traceback logged while a comm message is handled names that
    message, and a front end shows it in the cell that displayed the widget."""
    parts: list[str] = []
    for message in kernel.published:
        content: dict[str, Any] = message["content"]
        if message["msg_type"] == "stream":
            parts.append(content["text"])
        elif message["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            parts.extend(str(v) for v in content["data"].values())
        elif message["msg_type"] == "error":
            parts.append("\n".join(content.get("traceback", [])))
    return "\n".join(parts)


def test_fifty_allows_under_comm_chatter_leave_no_traceback(
    kernel: Kernel, server: MessagesServer
) -> None:
    server.add_turns(
        *(Turn([tool_use("PythonExec", {"code": CODES[i % 2]})]) for i in range(CLICKS))
    )
    server.add_turns(Turn([text("All steps ran.")]))
    chatter = Chatter(kernel)
    run = kernel.submit("%%agent --new\nRun the steps, fifty times.")
    for count in range(1, CLICKS + 1):
        deadline = time.monotonic() + 30
        while len(kernel.buttons("Allow once", run)) < count:
            assert time.monotonic() < deadline, f"prompt {count} never came:\n{run.text()}"
            chatter.burst(run)
            kernel.pump(timeout=0.01)
        allow = kernel.buttons("Allow once", run)[-1]
        kernel.click(allow)
        # Right after the click, as the front end does when it redraws the decided prompt,
        # and on through the run of the approved code.
        chatter.pump_while(run, 0.4)
    deadline = time.monotonic() + 60
    while run.finished_at is None:  # the last answer and the footer, under chatter too
        assert time.monotonic() < deadline, f"the cell did not end:\n{run.text()}"
        chatter.burst(run)
        kernel.pump(timeout=0.01)
    kernel.wait(run, timeout=60)

    assert run.status == "ok", run.text()
    assert "All steps ran." in run.answer
    final = server.requests[-1].body["messages"]
    sent_results = [
        b
        for m in final
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert len(sent_results) == CLICKS
    assert all(not b.get("is_error") for b in sent_results), sent_results
    assert all("step 2" in str(b["content"]) for b in sent_results)
    assert chatter.sent > CLICKS * 5
    shown = every_text(kernel) + kernel.log()
    for mark in TRACE_MARKS:
        assert mark not in shown, shown[max(0, shown.find(mark) - 800) : shown.find(mark) + 800]
    assert not any(mark in str(b["content"]) for b in sent_results for mark in TRACE_MARKS)
    assert server.errors == [], server.errors
    assert kernel.run("print('next cell')").stdout == "next cell\n"


PHASES = ("before the request", "streaming", "prompt", "tool run", "footer")
DISPLAYING = (
    # Code that shows outputs while it awaits: the display capture is in place meanwhile.
    "import asyncio\nfrom IPython.display import HTML, display\n"
    "for step in range(3):\n"
    "    display(HTML(f'<b>shown {step}</b>'))\n"
    "    print('step', step)\n"
    "    await asyncio.sleep(0.15)\n"
)


class PhaseChatter(Chatter):
    """Chatter that notes, for each burst, which phase of the prompt the cell is in, from
    what the cell has shown so far."""

    def __init__(self, kernel: Kernel) -> None:
        super().__init__(kernel)
        self.by_phase: dict[str, int] = dict.fromkeys(PHASES, 0)
        self.clicked = 0

    def phase(self, run: CellRun) -> str:
        kinds = [
            (m["content"].get("data") or {}).get(MIME_TYPE, {}).get("kind")
            for m in run.messages
            if m["msg_type"] in ("display_data", "update_display_data")
        ]
        if "footer" in kinds:
            return "footer"
        if self.clicked >= len(self.kernel.buttons("Allow once", run)) > 0:
            return "tool run"
        if self.kernel.buttons("Allow once", run):
            return "prompt"
        if any(
            m["msg_type"] in ("display_data", "update_display_data")
            and is_answer_stream(m["content"])
            for m in run.messages
        ):
            return "streaming"
        return "before the request"

    def burst(self, run: CellRun) -> None:
        before = self.sent
        super().burst(run)
        if self.sent > before:
            self.by_phase[self.phase(run)] += 1


def is_answer_stream(content: dict[str, Any]) -> bool:
    return ((content.get("data") or {}).get(MIME_TYPE) or {}).get("kind") == "answer"


def test_widget_messages_in_every_phase_of_a_prompt_leave_no_traceback(
    kernel: Kernel, server: MessagesServer
) -> None:
    rounds = 3
    for _ in range(rounds):
        server.add_turns(
            Turn(
                [
                    text("Running the steps now, "),
                    text("with a table shown."),
                    tool_use("PythonExec", {"code": DISPLAYING}),
                ],
                block_delay=0.3,
                delay_before=0.4,
            )
        )
    server.add_turns(Turn([text("All shown."), text(" Done.")], block_delay=0.3))
    chatter = PhaseChatter(kernel)
    run = kernel.submit("%%agent --new\nShow the steps, three times.")
    deadline = time.monotonic() + 90
    while run.finished_at is None:
        assert time.monotonic() < deadline, f"the cell did not end:\n{run.text()}"
        chatter.burst(run)
        kernel.pump(timeout=0.01)
        allows = kernel.buttons("Allow once", run)
        if len(allows) > chatter.clicked and chatter.by_phase["prompt"] >= 3 * (
            chatter.clicked + 1
        ):
            chatter.clicked += 1
            kernel.click(allows[-1])
    # On through the footer and the cell's end, as a front end redraws what it shows.
    chatter.pump_while(run, 0.5)
    kernel.wait(run, timeout=30)

    assert run.status == "ok", run.text()
    assert "All shown." in run.answer
    assert chatter.clicked == rounds
    assert all(count > 0 for count in chatter.by_phase.values()), chatter.by_phase
    shown = every_text(kernel) + kernel.log()
    for mark in TRACE_MARKS:
        assert mark not in shown, shown[max(0, shown.find(mark) - 800) : shown.find(mark) + 800]
    # What the code displayed is there, once per step and round, under its card.
    displayed = [d for d in run.displays("text/html") if d.startswith("<b>shown ")]
    assert len(displayed) == 3 * rounds, displayed
    assert server.errors == [], server.errors
    print(f"widget messages by phase: {chatter.by_phase}")


def test_the_capturing_publisher_keeps_the_kernel_publishers_interface(kernel: Kernel) -> None:
    """Every public attribute of the kernel's display publisher is there while PythonExec
    captures, and the parent the kernel sets reaches the real publisher."""
    run = kernel.run(
        "from jupyter_toolhost.jupyter.kernel.captured import streaming_capture\n"
        "shell = get_ipython()\n"
        "real = shell.display_pub\n"
        "names = [n for n in dir(real) if not n.startswith('_')]\n"
        "with streaming_capture(shell, lambda tail, lines: None):\n"
        "    swapped = shell.display_pub\n"
        "    missing = [n for n in names if not hasattr(swapped, n)]\n"
        "    swapped.set_parent({'header': {'msg_id': 'probe'}, 'msg_id': 'probe'})\n"
        "    reached = real.parent_header\n"
        "print(swapped is not real, len(names) > 10, missing, dict(reached))\n"
    )
    assert run.status == "ok", run.text()
    assert run.stdout.strip() == "True True [] {'msg_id': 'probe'}", run.stdout
