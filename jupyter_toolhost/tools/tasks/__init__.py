"""The Task tools: TaskCreate, TaskUpdate, TaskGet, TaskList (a shared task list with
status, owner and dependencies) and TaskStop (stops background work of any kind).

TaskCreate/TaskUpdate/TaskGet/TaskList are the Task generation of the checklist and are
enabled when `JUPYTER_TOOLHOST_TASKS_V2` is on (TodoWrite is enabled otherwise); TaskStop
is always enabled, since background commands and subagents exist in both generations.
Each call of the four list tools reports the whole list, in board order, as its progress
(`Progress.checklist`), for front ends to show.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ChecklistItem, Progress, ToolUseContext
from ...core.tool import Tool, build_tool, no_permission_needed
from ...core.types import ToolInputError
from ..bash import background as shell_tasks
from . import board
from .board import TaskList, WorkItem
from .prompt import (
    CREATE,
    CREATE_DESCRIPTION,
    CREATED,
    GET,
    GET_DESCRIPTION,
    LIST,
    LIST_DESCRIPTION,
    STOP,
    STOP_DESCRIPTION,
    TASKS_V2_ENV,
    UPDATE,
    UPDATE_DESCRIPTION,
)
from .registry import BackgroundTask, BackgroundTasks, background_tasks
from .state import env_flag

OUTPUT_TAIL_BYTES = 4_000

__all__ = [
    "BackgroundTask",
    "BackgroundTasks",
    "background_tasks",
    "make_tools",
    "tasks_v2_enabled",
]


def tasks_v2_enabled() -> bool:
    """Whether the session uses the Task generation (else TodoWrite)."""
    return env_flag(TASKS_V2_ENV)


class TaskCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, description="A short imperative title.")
    description: str = Field(default="", description="What has to be done; what done means.")
    activeForm: str | None = Field(
        default=None, description='Shown while the task runs, e.g. "Running the tests".'
    )
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form data.")


class TaskUpdateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(description="The id of the task to change.")
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = None
    subject: str | None = None
    description: str | None = None
    activeForm: str | None = None
    owner: str | None = Field(default=None, description="The agent working on it.")
    addBlocks: list[str] | None = Field(default=None, description="Ids this task blocks.")
    addBlockedBy: list[str] | None = Field(default=None, description="Ids that block it.")
    metadata: dict[str, Any] | None = Field(
        default=None, description="Keys to merge in; a null value removes a key."
    )


class TaskGetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(description="A task list id, or a background task id.")


class TaskListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskStopInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="The id of the background task to stop.")


def report_checklist(context: ToolUseContext) -> None:
    """Report the call's task list (deleted items are gone from it) as its progress."""
    if context.progress is None:
        return
    items = board.read_list(context).items
    checklist = tuple(ChecklistItem(i.subject, i.status, i.active_form) for i in items)
    context.progress(Progress(checklist=checklist))


def create_task(input: TaskCreateInput, context: ToolUseContext) -> str:
    item = WorkItem(
        id="",
        subject=input.subject,
        description=input.description,
        active_form=input.activeForm,
        metadata=dict(input.metadata or {}),
    )
    tasks = board.change_list(context, lambda tasks: board.add_item(tasks, item))
    created = tasks.items[-1]
    report_checklist(context)
    return CREATED.format(id=created.id, subject=created.subject)


def update_task(input: TaskUpdateInput, context: ToolUseContext) -> str:
    changes: list[str] = []

    def change(tasks: TaskList) -> TaskList:
        changes.clear()
        item = board.require(tasks, input.taskId)
        if input.status == "deleted":
            changes.append("deleted")
            return board.remove(tasks, item.id)
        for other in input.addBlocks or []:
            tasks = board.link(tasks, item.id, other)
            changes.append(f"blocks {other}")
        for other in input.addBlockedBy or []:
            tasks = board.link(tasks, other, item.id)
            changes.append(f"blocked by {other}")
        item = board.require(tasks, item.id)
        fields: dict[str, Any] = {}
        for name, value in (
            ("subject", input.subject),
            ("description", input.description),
            ("active_form", input.activeForm),
            ("owner", input.owner),
        ):
            if value is not None:
                fields[name] = value
                changes.append(name.replace("_", " "))
        if input.metadata is not None:
            merged = {**item.metadata, **input.metadata}
            fields["metadata"] = {k: v for k, v in merged.items() if v is not None}
            changes.append("metadata")
        if input.status is not None and input.status != item.status:
            blockers = board.open_blockers(tasks, item)
            if input.status == "completed" and blockers:
                raise ToolInputError(
                    f"Task {item.id} is blocked by unfinished tasks {', '.join(blockers)}; "
                    "finish those first."
                )
            fields["status"] = input.status
            changes.append(f"status {input.status}")
        return board.put(tasks, replace(item, **fields))

    board.change_list(context, change)
    report_checklist(context)
    done = ", ".join(changes) if changes else "nothing changed"
    return f"Updated task #{input.taskId}: {done}"


def get_task(input: TaskGetInput, context: ToolUseContext) -> str:
    tasks = board.read_list(context)
    report_checklist(context)
    item = tasks.get(input.taskId)
    if item is not None:
        return _describe_item(tasks, item)
    running = background_tasks(context).get(input.taskId)
    if running is not None:
        return running.describe()
    shell = shell_tasks.get_task(context, input.taskId)
    if shell is not None:
        return _describe_shell(shell)
    raise ToolInputError(
        f"No task with id {input.taskId!r}. TaskList shows the task list and background tasks."
    )


def list_tasks(input: TaskListInput, context: ToolUseContext) -> str:
    tasks = board.read_list(context)
    report_checklist(context)
    lines = [f"Task list ({board.list_name(context)}):"] if tasks.items else ["No tasks yet."]
    for item in tasks.items:
        owner = f" (owner: {item.owner})" if item.owner else ""
        blockers = board.open_blockers(tasks, item)
        blocked = f" [blocked by {', '.join(blockers)}]" if blockers else ""
        lines.append(f"#{item.id} [{item.status}] {item.subject}{owner}{blocked}")
    background = [
        f"{t.id} [{t.status}] ({t.kind}) {t.description}" for t in background_tasks(context).all()
    ]
    background += [
        f"{t.id} [{t.status}] (bash) {t.description or t.command}"
        for t in shell_tasks.list_tasks(context).values()
    ]
    if background:
        lines.append("Background tasks:")
        lines += background
    return "\n".join(lines)


async def stop_task(input: TaskStopInput, context: ToolUseContext) -> str:
    registry = background_tasks(context)
    shell = shell_tasks.get_task(context, input.task_id)
    if shell is not None and registry.get(input.task_id) is None:
        if shell.status != "running":
            raise ToolInputError(f"task {shell.id} is not running (status: {shell.status})")
        stopped = shell_tasks.stop_task(context, shell.id)
        return f"Stopped bash task {stopped.id}: {stopped.description or stopped.command}"
    try:
        task = await registry.stop(input.task_id)
    except KeyError:
        ids = [t.id for t in registry.running()]
        ids += [t.id for t in shell_tasks.list_tasks(context).values() if t.status == "running"]
        known = ", ".join(ids) or "none are running"
        raise ToolInputError(f"No background task {input.task_id!r} ({known}).") from None
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    return f"Stopped {task.kind} task {task.id}: {task.description}"


def _describe_item(tasks: TaskList, item: WorkItem) -> str:
    lines = [f"Task #{item.id}: {item.subject}", f"Status: {item.status}"]
    if item.description:
        lines.append(f"Description: {item.description}")
    if item.owner:
        lines.append(f"Owner: {item.owner}")
    if item.blocked_by:
        open_ = board.open_blockers(tasks, item)
        lines.append(f"Blocked by: {', '.join(item.blocked_by)} (open: {', '.join(open_) or '-'})")
    if item.blocks:
        lines.append(f"Blocks: {', '.join(item.blocks)}")
    if item.metadata:
        lines.append(f"Metadata: {dict(item.metadata)}")
    return "\n".join(lines)


def _describe_shell(task: shell_tasks.BackgroundTask) -> str:
    end = task.ended_at or time.time()
    lines = [
        f"Task {task.id} (bash): {task.description or task.command}",
        f"Command: {task.command}",
        f"Status: {task.status} ({end - task.started_at:.1f} s)",
    ]
    if task.exit_code is not None:
        lines.append(f"Exit code: {task.exit_code}")
    output, size = shell_tasks.read_output(task, max_bytes=OUTPUT_TAIL_BYTES)
    lines.append(f"Output file: {task.output_path} ({size} bytes)")
    if output:
        lines.append(f"Output (last {min(size, OUTPUT_TAIL_BYTES)} bytes):\n{output}")
    return "\n".join(lines)


def make_tools() -> list[Tool[Any]]:
    """Fresh TaskCreate, TaskUpdate, TaskGet, TaskList and TaskStop tools."""
    return [
        build_tool(
            name=CREATE,
            check_permissions=no_permission_needed,
            input_model=TaskCreateInput,
            call=create_task,
            description=CREATE_DESCRIPTION,
            is_enabled=tasks_v2_enabled,
            should_defer=True,
            search_hint="create a task in the shared task list",
        ),
        build_tool(
            name=UPDATE,
            check_permissions=no_permission_needed,
            input_model=TaskUpdateInput,
            call=update_task,
            description=UPDATE_DESCRIPTION,
            is_enabled=tasks_v2_enabled,
            should_defer=True,
            search_hint="update task status owner dependencies",
        ),
        build_tool(
            name=GET,
            input_model=TaskGetInput,
            call=get_task,
            description=GET_DESCRIPTION,
            is_enabled=tasks_v2_enabled,
            read_only=True,
            concurrency_safe=True,
            should_defer=True,
            search_hint="show one task or background task",
        ),
        build_tool(
            name=LIST,
            input_model=TaskListInput,
            call=list_tasks,
            description=LIST_DESCRIPTION,
            is_enabled=tasks_v2_enabled,
            read_only=True,
            concurrency_safe=True,
            should_defer=True,
            search_hint="list tasks and background tasks",
        ),
        build_tool(
            name=STOP,
            check_permissions=no_permission_needed,
            input_model=TaskStopInput,
            call=stop_task,
            description=STOP_DESCRIPTION,
            should_defer=True,
            search_hint="stop kill a background shell command or subagent",
        ),
    ]
