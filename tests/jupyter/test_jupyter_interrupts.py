"""Interrupting a `%%agent` cell in a real kernel over jupyter_client (issue 15).

What has not started (a call waiting for approval, a queued call) is answered at once and
the cell ends within about a second; a running "block" call is let finish with its grace
counted down in the live panel; a second interrupt stops it too; a sync tool is told to
stop through `context.cancelled()` and, if it does not, is reported as possibly still
running. Every test ends with a working next cell and a valid conversation. The measured
figures are printed (`pytest -s`).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.testing.prompt_cache import without_cache_marks

pytestmark = pytest.mark.timeout(120)

END_BOUND_S = 1.5
"""The brief's "within 1 s", measured from the interrupt request to the cell's idle status."""

TOOLS = '''
import asyncio, time
from pathlib import Path
from jupyter_toolhost import tool, ToolUseContext

@tool(interrupt_behavior="cancel")
async def slow_step(seconds: float) -> str:
    """Work for a while (not concurrency-safe)."""
    Path("slow.started").write_text("1")
    await asyncio.sleep(seconds)
    return "slow done"

@tool
def mark(name: str) -> str:
    """Write a marker file."""
    Path(name).write_text("marked")
    return "marked"

@tool(interrupt_behavior="block")
async def finish_job(name: str, seconds: float) -> str:
    """A job that must not be cut off."""
    Path(name + ".started").write_text("1")
    await asyncio.sleep(seconds)
    Path(name).write_text("finished")
    return "job finished"

@tool(interrupt_behavior="cancel")
def polite_sync(name: str, seconds: float, context: ToolUseContext) -> str:
    """A sync job that watches its cancellation flag."""
    Path(name + ".started").write_text("1")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if context.cancelled():
            return "stopped early"
        time.sleep(0.01)
    Path(name).write_text("finished")
    return "job finished"

@tool(interrupt_behavior="cancel")
def stubborn_sync(name: str, seconds: float) -> str:
    """A sync job that ignores its cancellation flag."""
    Path(name + ".started").write_text("1")
    time.sleep(seconds)
    Path(name).write_text("finished")
    return "job finished"
'''


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("interrupts")


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    running = agent_kernel(root, server.base_url)
    try:
        defined = running.run(TOOLS)
        assert defined.status == "ok", defined.text()
        yield running
    finally:
        running.close()


def wait_for_file(kernel: Kernel, run: CellRun, path: Path, timeout: float = 20) -> None:
    kernel.wait(run, timeout=timeout, until=path.exists)


def interrupted(kernel: Kernel, run: CellRun, sent: float, label: str) -> float:
    kernel.wait(run, timeout=20)
    assert run.error is not None and run.error["ename"] == "AgentInterrupted", run.text()
    ends_with_footer_and_one_line(run)
    assert run.finished_at is not None
    took = run.finished_at - sent
    print(f"{label}: the cell ended {took:.2f} s after the interrupt")
    return took


def ends_with_footer_and_one_line(run: CellRun) -> None:
    """An interrupted cell ends as a finished one does, with its footer (what was spent,
    "stop: interrupted"), then one line, its error, saying what ran and what was kept: no
    notice says it again, and no traceback."""
    shown = [
        m
        for m in run.messages
        if m["msg_type"] in ("display_data", "stream", "error")
        and (m["msg_type"] != "display_data" or m["content"]["data"].get("text/plain"))
    ]
    footer, error = shown[-2], shown[-1]
    assert footer["msg_type"] == "display_data", shown[-3:]
    plain = footer["content"]["data"]["text/plain"]
    assert plain.startswith("── ") and plain.endswith(" · stop: interrupted ──"), plain
    assert "tool call" in plain and "model request" in plain
    assert error["msg_type"] == "error"
    [line] = error["content"]["traceback"]
    assert line.startswith("Interrupted: ") and "The conversation is kept" in line, line
    assert "Traceback" not in line and "AgentInterrupted" not in line
    assert run.text().count("The conversation is kept") == 1, run.text()


def follow_up(kernel: Kernel, server: MessagesServer) -> list[dict[str, Any]]:
    """The next cell works; returns the tool_results the interrupted turn left behind."""
    assert kernel.run("print(1 + 1)").stdout == "2\n"
    server.add_turns(Turn([text("Resumed fine.")]))
    follow = kernel.run("%%agent\nAre you still there?")
    assert follow.status == "ok", follow.text()
    assert "Resumed fine." in follow.answer
    assert server.errors == [], server.errors
    last = without_cache_marks(server.requests[-1].body["messages"])
    roles = [m["role"] for m in last]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    message = last[-1]
    assert message["role"] == "user"
    blocks = message["content"]
    assert blocks[-1] == {"type": "text", "text": "Are you still there?"}
    return [b for b in blocks if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else json.dumps(content)


def live_updates(run: CellRun) -> str:
    return "\n".join(
        json.dumps(m["content"]["data"].get("text/plain", ""))
        for m in run.messages
        if m["msg_type"] == "update_display_data"
    )


def test_interrupt_during_an_approval_prompt_ends_at_once(kernel: Kernel, server: MessagesServer):
    server.add_turns(Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]))
    run = kernel.submit("%%agent --new\nDo something risky")
    kernel.wait_for_button(run, "Allow once")
    time.sleep(0.2)
    took = interrupted(kernel, run, kernel.interrupt(), "approval prompt")
    assert took < END_BOUND_S
    assert "Approval prompt closed (interrupted): PythonExec" in run.stdout
    assert "neverran" not in run.stdout
    [result] = follow_up(kernel, server)
    assert result["is_error"] is True
    assert "never started" in result_text(result) and "permission" in result_text(result)


def test_interrupt_during_a_queued_call(kernel: Kernel, server: MessagesServer, root: Path):
    server.add_turns(
        Turn(
            [
                tool_use("slow_step", {"seconds": 30}),
                tool_use("mark", {"name": "queued.txt"}),
            ]
        )
    )
    run = kernel.submit("%%agent --new --mode bypassPermissions\nTwo steps")
    wait_for_file(kernel, run, root / "slow.started")
    time.sleep(0.2)
    took = interrupted(kernel, run, kernel.interrupt(), "queued call")
    assert took < END_BOUND_S
    assert not (root / "queued.txt").exists()
    slow, queued = follow_up(kernel, server)
    assert slow["is_error"] is True and "Interrupted by user" in result_text(slow)
    assert queued["is_error"] is True and "never started" in result_text(queued)


def test_a_running_block_call_finishes_with_its_grace_counted_down(
    kernel: Kernel, server: MessagesServer, root: Path
):
    server.add_turns(Turn([tool_use("finish_job", {"name": "job1.txt", "seconds": 1.6})]))
    run = kernel.submit("%%agent --new --mode bypassPermissions\nRun the job")
    wait_for_file(kernel, run, root / "job1.txt.started")
    time.sleep(0.2)
    took = interrupted(kernel, run, kernel.interrupt(), "running block call")
    assert 0.8 < took < 3.0  # it waited for the job, and not for the whole 3 s grace
    assert (root / "job1.txt").read_text() == "finished"
    shown = live_updates(run)
    assert "Finishing finish_job" in shown, shown
    assert "3 s\\u2026" in shown and "3 s\\u20262 s\\u2026" in shown, shown
    assert "Finishing" not in run.stdout  # the countdown stays out of compared output
    [result] = follow_up(kernel, server)
    assert result.get("is_error") is not True and result_text(result) == "job finished"


def test_a_second_interrupt_stops_the_block_call_too(
    kernel: Kernel, server: MessagesServer, root: Path
):
    server.add_turns(Turn([tool_use("finish_job", {"name": "job2.txt", "seconds": 30})]))
    run = kernel.submit("%%agent --new --mode bypassPermissions\nRun the long job")
    wait_for_file(kernel, run, root / "job2.txt.started")
    time.sleep(0.2)
    kernel.interrupt()
    kernel.wait(run, timeout=5, until=lambda: "Finishing finish_job" in live_updates(run))
    assert run.finished_at is None, "the first interrupt lets the block call finish"
    took = interrupted(kernel, run, kernel.interrupt(), "second interrupt")
    assert took < END_BOUND_S
    assert not (root / "job2.txt").exists()
    [result] = follow_up(kernel, server)
    assert result["is_error"] is True and "Interrupted again" in result_text(result)


def test_a_sync_tool_that_watches_its_flag_stops(
    kernel: Kernel, server: MessagesServer, root: Path
):
    server.add_turns(Turn([tool_use("polite_sync", {"name": "polite.txt", "seconds": 30})]))
    run = kernel.submit("%%agent --new --mode bypassPermissions\nRun the sync job")
    wait_for_file(kernel, run, root / "polite.txt.started")
    time.sleep(0.2)
    took = interrupted(kernel, run, kernel.interrupt(), "polite sync tool")
    assert took < END_BOUND_S
    [result] = follow_up(kernel, server)
    assert result["is_error"] is True and "The tool stopped when asked." in result_text(result)
    time.sleep(0.3)
    assert not (root / "polite.txt").exists()


def test_a_sync_tool_that_ignores_its_flag_is_reported_as_still_running(
    kernel: Kernel, server: MessagesServer, root: Path
):
    server.add_turns(Turn([tool_use("stubborn_sync", {"name": "stubborn.txt", "seconds": 2.5})]))
    run = kernel.submit("%%agent --new --mode bypassPermissions\nRun the stubborn job")
    wait_for_file(kernel, run, root / "stubborn.txt.started")
    time.sleep(0.2)
    took = interrupted(kernel, run, kernel.interrupt(), "stubborn sync tool")
    assert took < END_BOUND_S
    assert not (root / "stubborn.txt").exists()
    [result] = follow_up(kernel, server)
    assert result["is_error"] is True and "may still be running" in result_text(result)
    deadline = time.monotonic() + 10
    while not (root / "stubborn.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (root / "stubborn.txt").read_text() == "finished"  # the write the result warned of


def test_a_stopped_python_exec_is_interrupted_and_keeps_what_it_printed(
    kernel: Kernel, server: MessagesServer, root: Path
) -> None:
    code = (
        "import time\n"
        "for i in range(60):\n"
        "    print(f'row {i}', flush=True)\n"
        "    if i == 2:\n"
        "        open('python-started', 'w').close()\n"
        "    time.sleep(0.2)\n"
    )
    server.add_turns(Turn([tool_use("PythonExec", {"code": code})]))
    run = kernel.submit("%%agent\nPrint rows slowly.")
    # PythonExec asks in every mode (it can rewrite .toolhost/): a person allows this one.
    kernel.click(kernel.wait_for_button(run, "Allow once")[0])
    wait_for_file(kernel, run, root / "python-started")
    sent = kernel.interrupt()
    interrupted(kernel, run, sent, "PythonExec")
    batches = [
        json.loads(json.dumps(m["content"]["data"]["application/vnd.jupyter.toolhost.v1+json"]))
        for m in run.messages
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get("application/vnd.jupyter.toolhost.v1+json", {}).get("kind")
        == "batch"
    ]
    [card] = [c for b in batches for c in b["calls"] if c["name"] == "PythonExec"]
    assert card["label"] == "interrupted", card
    assert "row 0" in card["result"] and "row 2" in card["result"]  # what it printed stays
    assert "tool_use_error" not in card["result"]
    html = next(
        m["content"]["data"]["text/html"]
        for m in run.messages
        if m["msg_type"] == "display_data"
        and "PythonExec" in m["content"]["data"].get("text/plain", "")
    )
    assert ">interrupted</span>" in html
    (root / "python-started").unlink()
