"""TeamCreate/TeamDelete through the real loop: a member shares the lead's task list."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_support import (
    AGENT_ID,
    Router,
    last_results,
    offered_names,
    result_text,
    session_for,
)

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent, send_message, tasks, team
from jupyter_toolhost.tools.tasks import board
from jupyter_toolhost.tools.tasks.prompt import TASKS_V2_ENV
from jupyter_toolhost.tools.tasks.registry import background_tasks


async def test_team_member_claims_a_shared_task_and_the_team_is_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TASKS_V2_ENV, "1")
    member = {
        "description": "count rows",
        "prompt": "SUB-ALICE: take task 1",
        "team_name": "crew",
        "name": "alice",
        "run_in_background": True,
    }
    router = Router(
        {
            "MAIN-TEAM": [
                Turn([tool_use("TeamCreate", {"team_name": "crew", "description": "data work"})]),
                Turn([tool_use("TaskCreate", {"subject": "Count rows"})]),
                Turn([tool_use("Agent", member)]),
                Turn([text("Alice is on it.")]),
                Turn([tool_use("TaskList", {}), tool_use("TeamDelete", {})]),
                Turn([text("Team done.")]),
            ],
            "SUB-ALICE": [
                Turn(
                    [
                        tool_use(
                            "TaskUpdate", {"taskId": "1", "owner": "alice", "status": "in_progress"}
                        )
                    ]
                ),
                Turn([tool_use("TaskUpdate", {"taskId": "1", "status": "completed"})]),
                Turn([text("Counted 3 rows.")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        tools = [
            agent.make_tool(),
            send_message.make_tool(),
            *team.make_tools(),
            *tasks.make_tools(),
        ]
        session = session_for(server, tmp_path, tools)
        assert await session.run("MAIN-TEAM: count rows with a team") == "Alice is on it."
        started = result_text(last_results(router.seen["MAIN-TEAM"][3])[0])
        match = AGENT_ID.search(started)
        assert match is not None
        record = background_tasks(session.context).get(match.group(0))
        assert record is not None and await record.wait(10)
        assert await session.run("wrap up") == "Team done."

    assert server.errors == []
    assert record.status == "completed" and (record.result or "").startswith("Counted 3 rows.")
    alice_first = router.seen["SUB-ALICE"][0]
    assert (
        'You are "alice", a member of the team "crew" (data work)'
        in (alice_first["system"][0]["text"])
    )
    # Team tools and Agent are for the lead only; the task tools are shared.
    names = offered_names(alice_first)
    assert "TeamCreate" not in names and "Agent" not in names and "TaskUpdate" in names
    listing, deleted = (result_text(r) for r in last_results(router.seen["MAIN-TEAM"][5]))
    assert "Task list (crew):" in listing and "#1 [completed] Count rows (owner: alice)" in listing
    assert deleted == "Deleted team crew and its task list."
    assert team.teams(session.context).all() == []
    assert board.list_name(session.context) == board.DEFAULT_LIST
    assert board.read_list(session.context, "crew").items == ()
