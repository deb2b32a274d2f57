"""A team of three through the real loop: a shared task board, member-to-member mail, mail to
the lead, and the lead reading every member's result.

Each member's conversation is a small state machine (`steps`): it waits, with short naps,
until the mail it depends on has reached its conversation, so the test does not depend on
timing. Every assertion on mail reads the requests the loopback server received.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import AGENT_ID, Router, last_results, result_text, session_for

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent, send_message, tasks, team
from jupyter_toolhost.tools.agent.subagents import subagents
from jupyter_toolhost.tools.tasks import board
from jupyter_toolhost.tools.tasks.prompt import TASKS_V2_ENV
from jupyter_toolhost.tools.tasks.registry import background_tasks


class NapInput(BaseModel):
    seconds: float


def nap_tool() -> Tool[NapInput]:
    async def nap(input: NapInput, context: ToolUseContext) -> str:
        await asyncio.sleep(input.seconds)
        return "rested"

    return build_tool(
        name="Nap",
        input_model=NapInput,
        call=nap,
        description="Sleep a while.",
        read_only=True,
        concurrency_safe=True,
    )


def mail(sender: str, message: str) -> str:
    return f'<message from="{sender}">\n{message}\n</message>'


def all_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                parts.append(block["text"])
            elif block.get("type") == "tool_result":
                parts.append(result_text(block))
    return "\n".join(parts)


NAP = Turn([tool_use("Nap", {"seconds": 0.05})])


def steps(*stages: tuple[Callable[[dict[str, Any]], bool] | None, Turn]) -> list[Any]:
    """A conversation as stages: each (ready?, turn); a stage whose condition does not hold
    yet answers with a short nap and is tried again on the next request."""
    pending = list(stages)

    def step(body: dict[str, Any]) -> Turn:
        ready, turn = pending[0]
        if ready is not None and not ready(body):
            return NAP
        pending.pop(0)
        return turn

    return [step] * 400


def claim(task_id: str, owner: str) -> Turn:
    return Turn(
        [tool_use("TaskUpdate", {"taskId": task_id, "owner": owner, "status": "in_progress"})]
    )


def complete(task_id: str) -> Turn:
    return Turn([tool_use("TaskUpdate", {"taskId": task_id, "status": "completed"})])


def got(sender: str, message: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: mail(sender, message) in all_text(body)


def member(name: str, marker: str) -> dict[str, Any]:
    return {
        "description": f"{name}'s part",
        "prompt": f"{marker}: do your task",
        "team_name": "crew",
        "name": name,
        "run_in_background": True,
    }


async def test_three_members_share_the_board_message_each_other_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TASKS_V2_ENV, "1")
    holder: dict[str, Any] = {}

    def alice_idle(body: dict[str, Any]) -> bool:
        alice = subagents(holder["session"].context).find("alice")
        return alice is not None and alice.status == "idle" and not alice.busy

    ids: dict[str, str] = {}

    def wrap_up(body: dict[str, Any]) -> Turn:
        # Carol's mail reached the idle lead's conversation; the next prompt joined it.
        last = body["messages"][-1]["content"]
        texts = [b["text"] for b in last if b.get("type") == "text"]
        assert texts == [mail("carol", "total is 3"), "MAIN-CREW: wrap up"]
        return Turn(
            [tool_use("TaskList", {})]
            + [tool_use("TaskGet", {"taskId": ids[n]}) for n in ("alice", "bob", "carol")]
        )

    router = Router(
        {
            "MAIN-CREW": [
                Turn([tool_use("TeamCreate", {"team_name": "crew", "description": "row math"})]),
                Turn(
                    [
                        tool_use("TaskCreate", {"subject": "Count rows"}),
                        tool_use("TaskCreate", {"subject": "Sum rows"}),
                        tool_use("TaskCreate", {"subject": "Report total"}),
                    ]
                ),
                Turn(
                    [
                        tool_use("Agent", member("alice", "SUB-ALICE")),
                        tool_use("Agent", member("bob", "SUB-BOB")),
                        tool_use("Agent", member("carol", "SUB-CAROL")),
                    ]
                ),
                Turn([text("Crew started.")]),
                wrap_up,
                Turn([tool_use("TeamDelete", {})]),
                Turn([text("Crew done: total 3.")]),
            ],
            "SUB-ALICE": steps(
                (None, claim("1", "alice")),
                (None, Turn([tool_use("SendMessage", {"to": "bob", "message": "rows=3"})])),
                (None, complete("1")),
                (None, Turn([text("alice: 3 rows")])),
                (got("carol", "thanks"), Turn([text("alice: you're welcome")])),
            ),
            "SUB-BOB": steps(
                (None, claim("2", "bob")),
                (
                    got("alice", "rows=3"),
                    Turn([tool_use("SendMessage", {"to": "carol", "message": "sum=3"})]),
                ),
                (None, complete("2")),
                (None, Turn([text("bob: sum 3")])),
            ),
            "SUB-CAROL": steps(
                (None, claim("3", "carol")),
                (got("bob", "sum=3"), NAP),
                (alice_idle, Turn([tool_use("SendMessage", {"to": "alice", "message": "thanks"})])),
                (None, Turn([tool_use("SendMessage", {"to": "lead", "message": "total is 3"})])),
                (None, complete("3")),
                (None, Turn([text("carol: total 3")])),
            ),
        }
    )
    with MessagesServer(router) as server:
        tools = [
            agent.make_tool(),
            send_message.make_tool(),
            nap_tool(),
            *team.make_tools(),
            *tasks.make_tools(),
        ]
        session = session_for(server, tmp_path, tools)
        holder["session"] = session
        assert await session.run("MAIN-CREW: do the row math as a team") == "Crew started."
        started = [result_text(r) for r in last_results(router.seen["MAIN-CREW"][3])]
        for name, line in zip(("alice", "bob", "carol"), started, strict=True):
            match = AGENT_ID.search(line)
            assert match is not None, line
            ids[name] = match.group(0)
        registry = background_tasks(session.context)
        for name in ids:
            record = registry.get(ids[name])
            assert record is not None and await record.wait(30), name
            assert record.status == "completed", (name, record.result)
        assert await session.run("MAIN-CREW: wrap up") == "Crew done: total 3."

    assert server.errors == []
    # Member-to-member mail: alice -> bob (bob busy: delivered between his turns),
    # bob -> carol, and carol -> alice once alice was idle (a follow-up run she answered).
    carol = router.seen["SUB-CAROL"]
    replies = [
        result_text(r)
        for body in carol
        for r in last_results(body)
        if "Reply from" in result_text(r) or "lead" in result_text(r)
    ]
    assert any(r.startswith("Reply from alice:\nalice: you're welcome") for r in replies)
    assert "Message sent to the lead; it reaches the lead at its next step." in replies
    alice_last = router.seen["SUB-ALICE"][-1]["messages"][-1]["content"]
    assert alice_last[-1]["text"] == mail("carol", "thanks")
    # The lead sees the board and every member's report.
    listing, *reports = (result_text(r) for r in last_results(router.seen["MAIN-CREW"][5]))
    assert "Task list (crew):" in listing
    for line in (
        "#1 [completed] Count rows (owner: alice)",
        "#2 [completed] Sum rows (owner: bob)",
        "#3 [completed] Report total (owner: carol)",
    ):
        assert line in listing
    for report, expected in zip(
        reports, ("alice: 3 rows", "bob: sum 3", "carol: total 3"), strict=True
    ):
        assert expected in report
    deleted = result_text(last_results(router.seen["MAIN-CREW"][6])[0])
    assert deleted == "Deleted team crew and its task list."
    assert board.list_name(session.context) == board.DEFAULT_LIST


async def test_mail_sent_right_after_a_background_start_waits_for_its_prompt(
    tmp_path: Path,
) -> None:
    # The lead starts a background member and messages it in the same response: the mail
    # must not start a run of its own ahead of the member's prompt.
    job = {
        "description": "early",
        "prompt": "SUB-EARLY: work",
        "name": "early",
        "run_in_background": True,
    }
    router = Router(
        {
            "MAIN-EARLY": [
                Turn(
                    [
                        tool_use("Agent", job),
                        tool_use("SendMessage", {"to": "early", "message": "also this"}),
                    ]
                ),
                Turn([text("sent")]),
            ],
            "SUB-EARLY": steps(
                (None, Turn([tool_use("Nap", {"seconds": 0.05})])),
                (got("lead", "also this"), Turn([text("did both")])),
            ),
        }
    )
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), send_message.make_tool(), nap_tool(), *tasks.make_tools()]
        session = session_for(server, tmp_path, tools)
        assert await session.run("MAIN-EARLY") == "sent"
        started, queued = (result_text(r) for r in last_results(router.seen["MAIN-EARLY"][1]))
        match = AGENT_ID.search(started)
        assert match is not None
        record = background_tasks(session.context).get(match.group(0))
        assert record is not None and await record.wait(20)

    assert server.errors == []
    assert "is working; the message will reach it at its next step" in queued
    first = router.seen["SUB-EARLY"][0]["messages"][0]["content"][0]["text"]
    assert first == "SUB-EARLY: work"
    assert record.status == "completed" and (record.result or "").startswith("did both")


async def test_mail_to_the_lead_during_its_last_turn_reaches_its_next_prompt(
    tmp_path: Path,
) -> None:
    router_box: dict[str, Router] = {}

    def last_turn(body: dict[str, Any]) -> Turn:
        # The member's SendMessage to the lead lands while this response is being written.
        for _ in range(400):
            if len(router_box["r"].seen["SUB-LATE"]) >= 2:
                break
            time.sleep(0.01)
        return Turn([text("started it")])

    def next_prompt(body: dict[str, Any]) -> Turn:
        texts = [b["text"] for b in body["messages"][-1]["content"] if b.get("type") == "text"]
        assert texts == [mail("late", "late news"), "what did it say?"]
        return Turn([text("it said: late news")])

    job = {"description": "late", "prompt": "SUB-LATE: go", "name": "late"}
    router = Router(
        {
            "MAIN-LATE": [
                Turn([tool_use("Agent", {**job, "run_in_background": True})]),
                last_turn,
                next_prompt,
            ],
            "SUB-LATE": [
                Turn([tool_use("SendMessage", {"to": "lead", "message": "late news"})]),
                Turn([text("told the lead")]),
            ],
        }
    )
    router_box["r"] = router
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), send_message.make_tool(), *tasks.make_tools()]
        session = session_for(server, tmp_path, tools)
        assert await session.run("MAIN-LATE") == "started it"
        assert await session.run("what did it say?") == "it said: late news"

    assert server.errors == []
    assert len(router.seen["SUB-LATE"]) == 2
