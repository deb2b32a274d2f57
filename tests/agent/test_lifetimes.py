"""What a conversation sets going ends with it, and the stop button stops background work
(issue 40, part 6). The real Session, tools and `anthropic` client against the loopback
Messages API server; real `bash` processes whose pids are checked in /proc.

- A prompt scheduled with CronCreate in bypassPermissions makes no request after the
  conversation ended (`Session.end`), and nothing of it runs.
- An interrupt during a background subagent's Bash `sleep` stops the subagent (no further
  request from it) and kills the command's process group (the shell and its `sleep`).
- A conversation that ended starts nothing new: CronCreate, a background Agent and a
  background Bash are refused with a clear error.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_helpers import processes_with
from session_support import Router, result_text, session_for

from jupyter_toolhost.core.context import SandboxOptions
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools
from jupyter_toolhost.tools.cron import MIN_INTERVAL_KEY

pytestmark = pytest.mark.timeout(60)


async def until(holds: Callable[[], bool], seconds: float) -> bool:
    """Whether `holds()` became true within `seconds` (checked every 50 ms)."""
    deadline = time.monotonic() + seconds
    for _ in itertools.count():
        if holds():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return False


def pool(names: set[str]) -> list[Any]:
    return [t for t in builtin_tools() if t.name in names]


@pytest.mark.parametrize(
    "mode", ["default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"]
)
async def test_ending_the_conversation_stops_its_schedule(tmp_path: Path, mode: str) -> None:
    router = Router(
        {
            "Ping me": [
                Turn([tool_use("CronCreate", {"cron": "@every 0.3s", "prompt": "PING"})]),
                Turn([text("Scheduled.")]),
            ],
            "PING": [],  # no scheduled prompt may reach the model
        }
    )
    with MessagesServer(router) as server:
        session = session_for(
            server,
            tmp_path,
            pool({"CronCreate"}),
            permission_mode=mode,
            rules=[("CronCreate", "allow")],
        )
        session.context.options.extras[MIN_INTERVAL_KEY] = 0.1
        await session.run("Ping me every 0.3 s")
        stopped = session.end("a new conversation started")
        scheduled = [line for line in stopped.stopped if "PING" in line]
        assert scheduled if mode != "plan" else not scheduled, stopped  # plan refuses it
        await asyncio.sleep(1.2)
        assert router.seen["PING"] == []
        assert server.errors == []


async def test_an_ended_conversation_starts_nothing_new(tmp_path: Path) -> None:
    router = Router(
        {
            "Start things": [
                Turn([tool_use("CronCreate", {"cron": "@every 1s", "prompt": "x"})]),
                Turn([tool_use("Bash", {"command": "sleep 30", "run_in_background": True})]),
                Turn(
                    [
                        tool_use(
                            "Agent",
                            {"description": "d", "prompt": "SUB", "run_in_background": True},
                        )
                    ]
                ),
                Turn([text("Tried.")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool({"CronCreate", "Bash", "Agent"}))
        session.end("the conversation was reset")
        await session.run("Start things")
        bodies = router.seen["Start things"][1:]
        results = [result_text(b["messages"][-1]["content"][0]) for b in bodies]
        assert len(results) == 3
        assert all("has ended (the conversation was reset)" in r for r in results), results
        assert server.errors == []


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("how", ["foreground", "background"])
async def test_interrupt_stops_a_background_subagent_and_its_bash(
    tmp_path: Path, sandbox: bool, how: str
) -> None:
    """The subagent's `sleep` runs in its Bash call, or in a background Bash of its own."""
    marker = tmp_path / "long-job.started"
    word = f"31.{abs(hash(str(tmp_path))) % 10**8}"
    # The shell's command line holds the word, and so does the `sleep` it starts.
    command = f"touch {marker}; sleep {word} & wait"
    sub_call = {"command": command, "run_in_background": how == "background"}
    router = Router(
        {
            "Lead": [
                Turn(
                    [
                        tool_use(
                            "Agent",
                            {
                                "description": "long job",
                                "prompt": "SUB-TASK: run the long job",
                                "run_in_background": True,
                            },
                        )
                    ]
                ),
                # The lead waits in a foreground command while the subagent works.
                Turn([tool_use("Bash", {"command": "sleep 20"})]),
                Turn([text("unreachable")]),
            ],
            "SUB-TASK": [
                Turn([tool_use("Bash", sub_call)]),
                # A background command returns at once: the subagent then waits too.
                Turn([tool_use("Bash", {"command": "sleep 20"})]),
                Turn([text("sub: one more request after the sleep")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(
            server, tmp_path, pool({"Agent", "Bash"}), sandbox=SandboxOptions(enabled=sandbox)
        )
        running = asyncio.ensure_future(session.run("Lead: start the job"))
        assert await until(marker.exists, 15), "the subagent never ran its command"
        await until(lambda: len(processes_with(word)) >= 2, 10)
        pids = processes_with(word)
        assert len(pids) >= 2, pids  # the shell and its sleep
        # The session's sandbox setting reaches its subagent's commands.
        wrapped = [p for p in pids if b"bwrap" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert bool(wrapped) == sandbox, wrapped
        await asyncio.sleep(0.3)  # a background command's subagent has asked again by now
        seen = len(router.seen["SUB-TASK"])
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert session.last_stopped is not None
        assert any("long job" in line for line in session.last_stopped.stopped)
        gone = await until(lambda: not processes_with(word), 5)
        assert gone, "the subagent's command outlived the stop"
        await asyncio.sleep(1.0)
        assert len(router.seen["SUB-TASK"]) == seen, "the subagent asked the model again"
        assert server.errors == []


async def test_a_scheduled_firing_that_runs_is_cancelled_when_the_conversation_ends(
    tmp_path: Path,
) -> None:
    """Nothing of the old conversation runs after its end: not even the firing in flight."""
    started = tmp_path / "firing.started"
    word = f"32.{abs(hash(str(tmp_path))) % 10**8}"
    router = Router(
        {
            "Ping me": [
                Turn([tool_use("CronCreate", {"cron": "@every 0.5s", "prompt": "PING"})]),
                Turn([text("Scheduled.")]),
                # The firing (same conversation) runs a command, then would ask again.
                Turn([tool_use("Bash", {"command": f"touch {started}; sleep {word}"})]),
                Turn([text("pong")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool({"CronCreate", "Bash"}))
        session.context.options.extras[MIN_INTERVAL_KEY] = 0.1
        await session.run("Ping me every 0.5 s")
        assert await until(started.exists, 15), "the schedule never fired"
        await until(lambda: bool(processes_with(word)), 5)
        assert processes_with(word)
        seen = len(router.seen["Ping me"])
        session.end("a new conversation started")
        assert await until(lambda: not processes_with(word), 5), "the firing's command lives on"
        await asyncio.sleep(1.2)
        assert len(router.seen["Ping me"]) == seen, "the old conversation asked the model again"
        assert server.errors == []


@pytest.mark.parametrize(
    ("sandbox", "shape"),
    [(True, "setsid"), (False, "setsid"), (True, "double-fork")],
    ids=["sandbox-setsid", "no-sandbox-setsid", "sandbox-double-fork"],
)
async def test_a_command_that_left_its_group_dies_with_the_conversation(
    tmp_path: Path, sandbox: bool, shape: str
) -> None:
    """`setsid` puts a child in a session (and group) of its own: the kill reaches it
    through its parent chain, and in the sandbox through the PID namespace. A double fork
    orphans it first: only the sandbox reaches that one (documented)."""
    word = f"33.{abs(hash(str(tmp_path))) % 10**8}"
    escape = f"setsid sleep {word} &" if shape == "setsid" else f"(setsid sleep {word} &);"
    command = f"{escape} sleep 1{word}"
    router = Router(
        {
            "Start": [
                Turn([tool_use("Bash", {"command": command, "run_in_background": True})]),
                Turn([text("Started.")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(
            server, tmp_path, pool({"Bash"}), sandbox=SandboxOptions(enabled=sandbox)
        )
        await session.run("Start the job")
        assert await until(lambda: len(processes_with(word)) >= 3, 10), processes_with(word)
        stopped = session.end("the conversation was reset")
        assert [line for line in stopped.stopped if word in line], stopped
        gone = await until(lambda: not processes_with(word), 5)
        assert gone, f"left behind: {processes_with(word)}"
        assert server.errors == []


MODES = ["default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"]


@pytest.mark.parametrize("mode", MODES)
async def test_interrupt_stops_a_background_subagent_in_every_mode(
    tmp_path: Path, mode: str
) -> None:
    """The subagent's Bash is allowed by a rule (plan mode refuses it: nothing runs)."""
    marker = tmp_path / "job.started"
    word = f"34.{abs(hash(str(tmp_path))) % 10**8}"
    router = Router(
        {
            "Lead": [
                Turn(
                    [
                        tool_use(
                            "Agent",
                            {"description": "job", "prompt": "SUB: go", "run_in_background": True},
                        )
                    ]
                ),
                Turn([tool_use("Sleep", {"duration_ms": 20_000})]),
                Turn([text("unreachable")]),
            ],
            "SUB: go": [
                Turn([tool_use("Bash", {"command": f"touch {marker}; sleep {word}"})]),
                Turn([tool_use("Sleep", {"duration_ms": 20_000})]),  # plan mode: waits here
                Turn([text("one more request")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(
            server,
            tmp_path,
            pool({"Agent", "Bash", "Sleep"}),
            permission_mode=mode,
            rules=[("Bash", "allow"), ("Sleep", "allow")],
        )
        running = asyncio.ensure_future(session.run("Lead: go"))
        if mode == "plan":
            await until(lambda: len(router.seen["SUB: go"]) >= 2, 15)
            assert not marker.exists(), "plan mode ran the subagent's command"
        else:
            assert await until(lambda: bool(processes_with(word)), 15), "it never ran"
        await asyncio.sleep(0.3)
        seen = len(router.seen["SUB: go"])
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert session.last_stopped is not None and session.last_stopped.stopped
        assert await until(lambda: not processes_with(word), 5), "its command lives on"
        await asyncio.sleep(1.0)
        assert len(router.seen["SUB: go"]) == seen, "the subagent asked the model again"
        assert server.errors == []
