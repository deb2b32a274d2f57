"""What a conversation sets going ends with it, in a real kernel (issue 40, part 6).

A real kernel over jupyter_client, the loopback Messages API, real `bash` processes found
by a marker in their command line (a sandboxed command's own pids are another namespace's),
with the Bash sandbox required and off:

- a prompt scheduled in a bypassPermissions conversation makes no request after
  `%%agent --new --mode plan`, and the new cell says what ended;
- `%agent reset` ends the schedule and kills a background command's process group;
- the stop button, during a background subagent's Bash `sleep`: the server gets no further
  request from the subagent, the shell and its `sleep` are gone, and the cell says so;
- a kernel restart kills a background command the conversation started.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel
from process_helpers import processes_with
from session_support import first_user_text

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(150)


def last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


class Script:
    """Answers by conversation: a scheduled prompt (its marker in the last user message)
    gets "pong"; any other request is answered from the steps of the conversation whose
    marker its first user message holds. Records the requests of each marker."""

    def __init__(self) -> None:
        self.routes: dict[str, list[Turn]] = {}
        self.seen: dict[str, int] = {}
        self.pings: dict[str, int] = {}

    def add(self, marker: str, *turns: Turn) -> None:
        self.routes[marker] = list(turns)
        self.seen[marker] = 0

    def ping(self, marker: str) -> None:
        self.pings[marker] = 0

    def __call__(self, body: dict[str, Any]) -> Turn:
        last = last_user_text(body)
        for marker in self.pings:
            if marker in last:
                self.pings[marker] += 1
                return Turn([text(f"pong {marker}")])
        first = first_user_text(body)
        for marker, turns in self.routes.items():
            if marker in first:
                self.seen[marker] += 1
                if not turns:
                    raise AssertionError(f"no turn left for {marker}")
                return turns.pop(0)
        raise AssertionError(f"no route for {first[:80]!r}")


@pytest.fixture(scope="module")
def script() -> Script:
    return Script()


@pytest.fixture(scope="module")
def server(script: Script) -> Iterator[MessagesServer]:
    with MessagesServer(script) as running:
        yield running


@pytest.fixture(scope="module", params=["sandbox", "no-sandbox"])
def kernel(
    request: pytest.FixtureRequest,
    server: MessagesServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Kernel]:
    root = tmp_path_factory.mktemp("lifetimes")
    sandbox = "1" if request.param == "sandbox" else "0"
    running = agent_kernel(root, server.base_url, env={"JUPYTER_TOOLHOST_BASH_SANDBOX": sandbox})
    try:
        yield running
    finally:
        running.close()


def eventually(holds: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if holds():
            return True
        time.sleep(0.1)
    return holds()


def marker(name: str) -> str:
    """A word unique to this test run, for `sleep` to carry in its command line."""
    return f"{abs(hash((name, os.getpid(), time.time()))) % 10**6 + 10**6}"


def test_new_conversation_in_plan_mode_ends_the_bypass_schedule(
    kernel: Kernel, script: Script, server: MessagesServer
) -> None:
    tag = f"PING-NEW-{marker('new')}"
    script.ping(tag)
    script.add(
        "ALPHA",
        Turn([tool_use("CronCreate", {"cron": "@every 1s", "prompt": tag})]),
        Turn([text("Scheduled.")]),
    )
    first = kernel.run("%%agent --new --mode bypassPermissions\nALPHA: ping me every second")
    assert first.status == "ok", first.text()
    assert eventually(lambda: script.pings[tag] >= 1, 15), "the schedule never fired"

    script.add("BETA", Turn([text("Hello in plan mode.")]))
    second = kernel.run("%%agent --new --mode plan\nBETA: hello")
    assert second.status == "ok", second.text()
    fired = script.pings[tag]
    time.sleep(2.5)
    assert script.pings[tag] == fired, "the old schedule fired after --new"
    shown = second.text()
    assert "The previous conversation ended" in shown and tag in shown, shown
    assert "plan" in kernel.run("%agent mode").text()
    assert server.errors == [], server.errors
    del script.pings[tag]


def test_reset_ends_the_schedule_and_kills_a_background_command(
    kernel: Kernel, script: Script, server: MessagesServer
) -> None:
    tag = f"PING-RESET-{marker('reset')}"
    word = marker("reset-sleep")
    script.ping(tag)
    script.add(
        "GAMMA",
        Turn(
            [
                tool_use("CronCreate", {"cron": "@every 1s", "prompt": tag}),
                tool_use("Bash", {"command": f"sleep 3{word}", "run_in_background": True}),
            ]
        ),
        Turn([text("Both started.")]),
    )
    run = kernel.run("%%agent --new --mode bypassPermissions\nGAMMA: start both")
    assert run.status == "ok", run.text()
    assert eventually(lambda: bool(processes_with(f"3{word}")), 10), "no background command"
    assert eventually(lambda: script.pings[tag] >= 1, 15), "the schedule never fired"

    reset = kernel.run("%agent reset")
    shown = reset.text()
    assert "Conversation reset" in shown and tag in shown and f"sleep 3{word}" in shown, shown
    fired = script.pings[tag]
    assert eventually(lambda: not processes_with(f"3{word}"), 5), "the command outlived reset"
    time.sleep(2.0)
    assert script.pings[tag] == fired, "the schedule fired after %agent reset"
    assert server.errors == [], server.errors
    del script.pings[tag]


def test_stop_button_stops_a_background_subagent_and_its_bash(
    kernel: Kernel, script: Script, server: MessagesServer
) -> None:
    word = marker("interrupt")
    started = Path(kernel.run("import os; print(os.getcwd())").stdout.strip()) / f"{word}.go"
    script.add(
        "LEAD",
        Turn(
            [
                tool_use(
                    "Agent",
                    {
                        "description": "long job",
                        "prompt": f"SUB-{word}: run the long job",
                        "run_in_background": True,
                    },
                )
            ]
        ),
        Turn([tool_use("Bash", {"command": "sleep 25"})]),  # the lead waits meanwhile
        Turn([text("unreachable")]),
    )
    script.add(
        f"SUB-{word}",
        Turn([tool_use("Bash", {"command": f"touch {started}; sleep 4{word} & wait"})]),
        Turn([text("the subagent's next request")]),
    )
    run = kernel.submit("%%agent --new --mode bypassPermissions\nLEAD: start the job")
    kernel.wait(run, timeout=30, until=started.exists)
    assert eventually(lambda: len(processes_with(f"4{word}")) >= 2, 10)
    seen = script.seen[f"SUB-{word}"]
    kernel.interrupt()
    kernel.wait(run, timeout=30)
    assert run.error is not None and run.error["ename"] == "AgentInterrupted", run.text()
    assert eventually(lambda: not processes_with(f"4{word}"), 5), "the subagent's Bash lives on"
    time.sleep(1.5)
    assert script.seen[f"SUB-{word}"] == seen, "the subagent asked the model after the stop"
    shown = run.text()
    assert "Stopped with the prompt" in shown and "long job" in shown, shown
    assert kernel.run("print('usable')").stdout == "usable\n"
    assert server.errors == [], server.errors


def test_agent_stop_stops_background_work_while_no_cell_runs(
    kernel: Kernel, script: Script, server: MessagesServer
) -> None:
    word = marker("agent-stop")
    script.add(
        "EPSILON",
        Turn([tool_use("Bash", {"command": f"sleep 6{word}", "run_in_background": True})]),
        Turn([text("Started.")]),
    )
    run = kernel.run("%%agent --new --mode bypassPermissions\nEPSILON: start it")
    assert run.status == "ok", run.text()
    assert eventually(lambda: bool(processes_with(f"6{word}")), 10)
    stopped = kernel.run("%agent stop")
    assert eventually(lambda: not processes_with(f"6{word}"), 5), "it outlived %agent stop"
    assert f"sleep 6{word}" in stopped.text(), stopped.text()
    again = kernel.run("%agent stop").text()
    assert "Nothing of this conversation runs in the background" in again, again
    assert server.errors == [], server.errors


def test_kernel_restart_kills_a_background_command(
    script: Script, server: MessagesServer, tmp_path: Path
) -> None:
    word = marker("restart")
    script.add(
        "DELTA",
        Turn([tool_use("Bash", {"command": f"sleep 5{word}", "run_in_background": True})]),
        Turn([text("Started.")]),
    )
    kernel = agent_kernel(tmp_path, server.base_url, env={"JUPYTER_TOOLHOST_BASH_SANDBOX": "0"})
    try:
        run = kernel.run("%%agent --new --mode bypassPermissions\nDELTA: start it")
        assert run.status == "ok", run.text()
        assert eventually(lambda: bool(processes_with(f"5{word}")), 10)
        kernel.manager.restart_kernel(now=False)
        assert eventually(lambda: not processes_with(f"5{word}"), 10), "it outlived the kernel"
    finally:
        kernel.close()
