"""TodoWrite and the Task tools through the real loop: the checklist in the app state, a
task list with owners and dependencies, and background work stopped with TaskStop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from session_support import Router, last_results, offered_names, result_text, session_for

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, tasks, todo_write
from jupyter_toolhost.tools.bash import background as shell_tasks
from jupyter_toolhost.tools.tasks import board
from jupyter_toolhost.tools.tasks.prompt import TASKS_V2_ENV
from jupyter_toolhost.tools.todo_write import TodoItem


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": content + "ing"}


async def test_todo_write_keeps_the_checklist_in_the_app_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TASKS_V2_ENV, raising=False)
    seen: list[tuple[TodoItem, ...]] = []
    router = Router(
        {
            "MAIN-TODO": [
                Turn(
                    [
                        tool_use(
                            "TodoWrite",
                            {"todos": [todo("Load", "in_progress"), todo("Plot", "pending")]},
                        )
                    ]
                ),
                Turn(
                    [
                        tool_use(
                            "TodoWrite",
                            {"todos": [todo("Load", "in_progress"), todo("Plot", "in_progress")]},
                        )
                    ]
                ),
                Turn(
                    [
                        tool_use(
                            "TodoWrite",
                            {"todos": [todo("Load", "completed"), todo("Plot", "completed")]},
                        )
                    ]
                ),
                Turn([text("All done.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, [todo_write.make_tool(), *tasks.make_tools()])
        session.context.app_state.subscribe(lambda state: seen.append(state.todos))
        assert await session.run("MAIN-TODO") == "All done."

    assert server.errors == []
    first = router.seen["MAIN-TODO"][0]
    # v1: TodoWrite is offered, the task-list tools are not (TaskStop always is).
    assert "TodoWrite" in offered_names(first) and "TaskCreate" not in offered_names(first)
    assert "TaskStop" in offered_names(first)
    assert todo_write.make_tool().to_api()["strict"] is True
    [ok] = last_results(router.seen["MAIN-TODO"][1])
    assert result_text(ok).startswith("Todos have been modified successfully.")
    [two_running] = last_results(router.seen["MAIN-TODO"][2])
    assert two_running.get("is_error") and "keep exactly one" in result_text(two_running)
    # The live checklist: first the two items, then (all completed) cleared.
    assert seen[0] == (
        TodoItem("Load", "in_progress", "Loading"),
        TodoItem("Plot", "pending", "Ploting"),
    )
    assert seen[-1] == () and session.context.get_app_state().todos == ()


async def test_task_list_with_owners_and_dependencies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TASKS_V2_ENV, "1")
    router = Router(
        {
            "MAIN-TASKS": [
                Turn(
                    [
                        tool_use("TaskCreate", {"subject": "Load data", "activeForm": "Loading"}),
                        tool_use("TaskCreate", {"subject": "Fit model", "description": "OLS"}),
                    ]
                ),
                Turn(
                    [
                        tool_use(
                            "TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"], "owner": "lead"}
                        )
                    ]
                ),
                Turn(
                    [
                        tool_use("TaskUpdate", {"taskId": "2", "status": "completed"}),
                        tool_use("TaskUpdate", {"taskId": "1", "addBlockedBy": ["2"]}),
                    ]
                ),
                Turn([tool_use("TaskUpdate", {"taskId": "1", "status": "completed"})]),
                Turn(
                    [
                        tool_use("TaskUpdate", {"taskId": "2", "status": "completed"}),
                        tool_use("TaskList", {}),
                        tool_use("TaskGet", {"taskId": "2"}),
                    ]
                ),
                Turn([text("Both done.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, [todo_write.make_tool(), *tasks.make_tools()])
        assert await session.run("MAIN-TASKS") == "Both done."

    assert server.errors == []
    seen = router.seen["MAIN-TASKS"]
    assert "TodoWrite" not in offered_names(seen[0]) and "TaskCreate" in offered_names(seen[0])
    created = [result_text(r) for r in last_results(seen[1])]
    assert created == [
        "Task #1 created successfully: Load data",
        "Task #2 created successfully: Fit model",
    ]
    blocked, cycle = last_results(seen[3])
    assert blocked.get("is_error") and "blocked by unfinished tasks 1" in result_text(blocked)
    assert cycle.get("is_error") and "cycle" in result_text(cycle)
    done, listing, got = (result_text(r) for r in last_results(seen[5]))
    assert done == "Updated task #2: status completed"
    assert "#1 [completed] Load data" in listing and "#2 [completed] Fit model (owner: lead)" in (
        listing
    )
    assert "Blocked by: 1 (open: -)" in got
    items = board.read_list(session.context).items
    assert [(i.id, i.status, i.blocked_by) for i in items] == [
        ("1", "completed", ()),
        ("2", "completed", ("1",)),
    ]


async def test_task_stop_kills_a_background_bash_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TASKS_V2_ENV, "1")
    marker = tmp_path / "still-running"
    command = f"sleep 0.3; touch {marker}; sleep 30"
    ids: dict[str, str] = {}

    def stop_it(body: dict[str, object]) -> Turn:
        started = result_text(last_results(body)[0])  # type: ignore[arg-type]
        ids["task"] = started.split("task id ")[1].split(".")[0]
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return Turn([tool_use("TaskStop", {"task_id": ids["task"]})])

    router = Router(
        {
            "MAIN-BASH": [
                Turn(
                    [
                        tool_use(
                            "Bash",
                            {
                                "command": command,
                                "run_in_background": True,
                                "description": "long job",
                            },
                        )
                    ]
                ),
                stop_it,
                lambda body: Turn(
                    [
                        tool_use("TaskGet", {"taskId": ids["task"]}),
                        tool_use("TaskStop", {"task_id": ids["task"]}),
                    ]
                ),
                Turn([text("Stopped.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, [bash.make_tool(), *tasks.make_tools()])
        assert await session.run("MAIN-BASH") == "Stopped."

    assert server.errors == []
    [stopped] = last_results(router.seen["MAIN-BASH"][2])
    assert result_text(stopped) == f"Stopped bash task {ids['task']}: long job"
    got, again = last_results(router.seen["MAIN-BASH"][3])
    assert f"Task {ids['task']} (bash)" in result_text(got) and "Status: killed" in result_text(got)
    assert again.get("is_error") and "not running" in result_text(again)
    task = shell_tasks.get_task(session.context, ids["task"])
    assert task is not None
    # The process group is gone (a signal 0 probe fails) soon after the stop.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(task.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.killpg(task.pid, 0)
