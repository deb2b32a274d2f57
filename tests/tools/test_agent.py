"""Agent and SendMessage through the real loop, the real client and the loopback server.

Each subagent answers from its own scripted conversation (`Router`); every test asserts
`server.errors == []`, so every conversation (the parent's and each subagent's) stayed valid
for the Messages API.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from session_support import (
    AGENT_ID,
    Router,
    ScriptedApprover,
    deploy_tool,
    last_results,
    result_text,
    session_for,
    tool_names,
)

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent, edit, read, send_message, tasks, write
from jupyter_toolhost.tools.agent.prompt import GENERAL_PURPOSE_PROMPT
from jupyter_toolhost.tools.agent.subagents import subagents
from jupyter_toolhost.tools.tasks.registry import background_tasks


class NapInput(BaseModel):
    seconds: float


class Naps:
    """A tool that sleeps, recording when each nap started and how it ended."""

    def __init__(self) -> None:
        self.spans: list[tuple[str | None, float, float]] = []
        self.cancelled: list[str | None] = []
        self.started = threading.Event()

    def tool(self) -> Tool[NapInput]:
        async def nap(input: NapInput, context: ToolUseContext) -> str:
            began = time.perf_counter()
            self.started.set()
            try:
                await asyncio.sleep(input.seconds)
            except asyncio.CancelledError:
                self.cancelled.append(context.agent_id)
                raise
            self.spans.append((context.agent_id, began, time.perf_counter()))
            return f"slept {input.seconds}"

        return build_tool(
            name="Nap",
            input_model=NapInput,
            call=nap,
            description="Sleep a while.",
            read_only=True,
            concurrency_safe=True,
            interrupt_behavior="cancel",
        )


def pool(*extra: Tool[Any]) -> list[Tool[Any]]:
    return [
        agent.make_tool(),
        send_message.make_tool(),
        read.make_tool(),
        write.make_tool(),
        edit.make_tool(),
        *tasks.make_tools(),
        *extra,
    ]


async def test_subagent_does_real_file_work_with_its_own_tools(tmp_path: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision("allow"))
    job = "SUB-FILES: create hello.txt saying hi, edit it to say hello, then deploy it."
    router = Router(
        {
            "MAIN-FILES": [
                Turn([tool_use("Agent", {"description": "write greeting", "prompt": job})]),
                Turn([text("The subagent wrote hello.txt.")]),
            ],
            "SUB-FILES": [
                Turn([tool_use("Write", {"file_path": "hello.txt", "content": "hi\n"})]),
                Turn(
                    [
                        tool_use(
                            "Edit",
                            {"file_path": "hello.txt", "old_string": "hi", "new_string": "hello"},
                        )
                    ]
                ),
                Turn([tool_use("Deploy", {"target": "staging"})]),
                Turn([text("Created hello.txt; it says hello. Deployed to staging.")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        # acceptEdits: the subagent's file edits run; only the deploy asks.
        session = session_for(
            server, tmp_path, pool(deploy_tool()), approver=approver, permission_mode="acceptEdits"
        )
        result = await session.run("MAIN-FILES: get a greeting file written")

    assert server.errors == []
    assert result == "The subagent wrote hello.txt."
    assert (tmp_path / "hello.txt").read_text() == "hello\n"
    [report] = last_results(router.seen["MAIN-FILES"][1])
    report_text = result_text(report)
    assert not report.get("is_error")
    assert report_text.startswith("Created hello.txt; it says hello. Deployed to staging.")
    match = AGENT_ID.search(report_text)
    assert match is not None
    agent_id = match.group(0)
    # The subagent's own conversation: its type's system prompt, no Agent tool (no nesting).
    first_sub = router.seen["SUB-FILES"][0]
    assert first_sub["system"][0]["text"] == GENERAL_PURPOSE_PROMPT
    assert "Agent" not in tool_names(first_sub) and "Write" in tool_names(first_sub)
    assert "Agent" in tool_names(router.seen["MAIN-FILES"][0])
    assert first_sub["messages"][0]["content"][0]["text"] == job
    # Its ask went to the session's approver, labelled with the agent's id.
    [asked] = approver.asked
    assert (asked.tool_name, asked.agent_id) == ("Deploy", agent_id)
    # Its transcript is kept beside the session's.
    transcript = session.session_dir / "subagents" / f"{agent_id}.jsonl"
    assert transcript.exists() and "hello.txt" in transcript.read_text()
    sub = subagents(session.context).get(agent_id)
    assert sub is not None and sub.status == "idle"
    assert sub.loop.context.query_tracking.depth == 1
    assert sub.loop.context.query_tracking.chain_id == session.context.query_tracking.chain_id


async def test_agent_calls_in_one_message_run_concurrently(tmp_path: Path) -> None:
    naps = Naps()
    calls = [
        tool_use("Agent", {"description": "nap A", "prompt": "SUB-A: nap"}),
        tool_use("Agent", {"description": "nap B", "prompt": "SUB-B: nap"}),
    ]
    router = Router(
        {
            "MAIN-PAR": [Turn(calls), Turn([text("both done")])],
            "SUB-A": [Turn([tool_use("Nap", {"seconds": 0.6})]), Turn([text("A rested")])],
            "SUB-B": [Turn([tool_use("Nap", {"seconds": 0.6})]), Turn([text("B rested")])],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool(naps.tool()))
        result = await session.run("MAIN-PAR: two naps")

    assert server.errors == []
    assert result == "both done"
    reports = [result_text(r) for r in last_results(router.seen["MAIN-PAR"][1])]
    assert reports[0].startswith("A rested") and reports[1].startswith("B rested")
    ids = {m.group(0) for r in reports if (m := AGENT_ID.search(r))}
    assert len(ids) == 2
    # The two naps overlapped in time: each began before the other ended.
    assert len(naps.spans) == 2
    (_, start_a, end_a), (_, start_b, end_b) = naps.spans
    assert max(start_a, start_b) < min(end_a, end_b)
    assert {span[0] for span in naps.spans} == ids


async def test_send_message_follows_up_a_finished_subagent(tmp_path: Path) -> None:
    def check_mail(body: dict[str, Any]) -> Turn:
        last = body["messages"][-1]["content"][0]["text"]
        assert last == '<message from="lead">\nWhich one is the largest?\n</message>'
        assert len(body["messages"]) == 3
        return Turn([text("big.csv")])

    ask = {"to": "scout", "message": "Which one is the largest?", "summary": "largest?"}
    router = Router(
        {
            "MAIN-FOLLOW": [
                Turn(
                    [
                        tool_use(
                            "Agent",
                            {
                                "description": "find data",
                                "prompt": "SUB-SCOUT: find",
                                "name": "scout",
                            },
                        )
                    ]
                ),
                Turn([tool_use("SendMessage", ask)]),
                Turn([text("big.csv is the largest.")]),
            ],
            "SUB-SCOUT": [Turn([text("Found 3 csv files.")]), check_mail],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool())
        result = await session.run("MAIN-FOLLOW: find data files")

    assert server.errors == []
    assert result == "big.csv is the largest."
    [reply] = last_results(router.seen["MAIN-FOLLOW"][2])
    assert result_text(reply).startswith("Reply from scout:\nbig.csv")
    assert len(router.seen["SUB-SCOUT"]) == 2


async def test_unknown_target_and_type_are_clear_errors(tmp_path: Path) -> None:
    router = Router(
        {
            "MAIN-BAD": [
                Turn(
                    [
                        tool_use("SendMessage", {"to": "nobody", "message": "hi"}),
                        tool_use(
                            "Agent", {"description": "x", "prompt": "y", "subagent_type": "Nope"}
                        ),
                    ]
                ),
                Turn([text("ok")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool())
        await session.run("MAIN-BAD")
    assert server.errors == []
    first, second = last_results(router.seen["MAIN-BAD"][1])
    assert first["is_error"] and "No agent 'nobody'" in result_text(first)
    assert second["is_error"] and "Unknown subagent_type 'Nope'" in result_text(second)
    assert "general-purpose" in result_text(second)


async def test_background_agent_gets_mail_between_turns_and_is_stopped(tmp_path: Path) -> None:
    naps = Naps()

    def started_id(body: dict[str, Any]) -> str:
        match = AGENT_ID.search(result_text(last_results(body)[0]))
        assert match is not None
        return match.group(0)

    def send_mail(body: dict[str, Any]) -> Turn:
        assert naps.started.wait(10), "the background agent never started its nap"
        return Turn([tool_use("SendMessage", {"to": "worker", "message": "Also check B."})])

    def worker_sees_mail(body: dict[str, Any]) -> Turn:
        blocks = body["messages"][-1]["content"]
        assert blocks[0]["type"] == "tool_result"
        assert blocks[-1]["text"] == '<message from="lead">\nAlso check B.\n</message>'
        return Turn([tool_use("Nap", {"seconds": 30})])

    stop: dict[str, str] = {}

    def stop_it(body: dict[str, Any]) -> Turn:
        stop["id"] = stop.get("id") or ""
        return Turn([tool_use("TaskStop", {"task_id": stop["id"]})])

    router = Router(
        {
            "MAIN-BG": [
                lambda body: Turn(
                    [
                        tool_use(
                            "Agent",
                            {
                                "description": "check A",
                                "prompt": "SUB-WORKER: check A",
                                "name": "worker",
                                "run_in_background": True,
                            },
                        )
                    ]
                ),
                send_mail,
                Turn([text("mail sent")]),
            ],
            "SUB-WORKER": [Turn([tool_use("Nap", {"seconds": 0.5})]), worker_sees_mail],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, pool(naps.tool()))
        result = await session.run("MAIN-BG: start a worker")
        assert result == "mail sent"
        queued = result_text(last_results(router.seen["MAIN-BG"][2])[0])
        assert "is working; the message will reach it at its next step" in queued
        worker_id = started_id(router.seen["MAIN-BG"][1])
        registry = background_tasks(session.context)
        # Wait until the worker has read the mail and started its long nap.
        for _ in range(200):
            if len(router.seen["SUB-WORKER"]) == 2 and len(naps.spans) == 1:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        assert registry.get(worker_id) is not None
        assert registry.get(worker_id).status == "running"  # type: ignore[union-attr]

        stop["id"] = worker_id
        router.routes["MAIN-BG"] += [stop_it, Turn([text("stopped it")])]
        began = time.perf_counter()
        result = await session.run("now stop it")
        elapsed = time.perf_counter() - began

    assert server.errors == []
    assert result == "stopped it"
    stopped = result_text(last_results(router.seen["MAIN-BG"][4])[0])
    assert stopped == f"Stopped agent task {worker_id}: check A"
    task = registry.get(worker_id)
    assert task is not None and task.status == "stopped"
    assert naps.cancelled == [worker_id]
    assert elapsed < 10  # the 30 s nap was cancelled, not waited for
    worker = subagents(session.context).get(worker_id)
    assert worker is not None and worker.status == "stopped"
    # The stopped worker's conversation is still valid: its nap got an is_error result.
    last = worker.loop.messages[-1]["content"][0]
    assert last["type"] == "tool_result" and last.get("is_error")
