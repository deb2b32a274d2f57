"""TodoWrite: the session's checklist, kept in the app state for front ends to render.

The main agent's list is `AppState.todos` (a tuple of `TodoItem`); a subagent's is kept
apart under `extras["agent_todos"][agent_id]`, so a subagent never overwrites its parent's
list. Each call reports the new list as its progress (`Progress.checklist`), for front ends
to show. Enabled unless `JUPYTER_TOOLHOST_TASKS_V2` selects the Task tools.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import AppState, ChecklistItem, Progress, ToolUseContext
from ...core.tool import Tool, build_tool, no_permission_needed
from ...core.types import ToolInputError, ToolResultContent
from ..tasks import tasks_v2_enabled
from .prompt import DESCRIPTION, NAME, RESULT

AGENT_TODOS_KEY = "agent_todos"


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One line of the checklist."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str


class TodoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str


class TodoWriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoInput] = Field(description="The whole updated checklist.")


def current_todos(context: ToolUseContext) -> tuple[TodoItem, ...]:
    """The checklist of the agent that owns `context` (the main one or a subagent)."""
    state = context.get_app_state()
    if context.agent_id is None:
        return tuple(state.todos)
    return tuple((state.extras.get(AGENT_TODOS_KEY) or {}).get(context.agent_id, ()))


def write_todos(input: TodoWriteInput, context: ToolUseContext) -> dict[str, object]:
    items = tuple(TodoItem(t.content, t.status, t.activeForm) for t in input.todos)
    if any(not item.content.strip() or not item.active_form.strip() for item in items):
        raise ToolInputError("Every todo needs a non-empty `content` and `activeForm`.")
    running = sum(item.status == "in_progress" for item in items)
    if running > 1:
        raise ToolInputError(
            f"{running} todos are in_progress; keep exactly one in progress at a time."
        )
    old = current_todos(context)
    stored = () if items and all(i.status == "completed" for i in items) else items
    agent = context.agent_id

    def update(state: AppState) -> AppState:
        if agent is None:
            return replace(state, todos=stored)
        by_agent = dict(state.extras.get(AGENT_TODOS_KEY) or {})
        by_agent[agent] = stored
        return replace(state, extras={**state.extras, AGENT_TODOS_KEY: by_agent})

    context.set_app_state(update)
    if context.progress is not None:
        checklist = tuple(ChecklistItem(i.content, i.status, i.active_form) for i in items)
        context.progress(Progress(checklist=checklist))
    return {"oldTodos": [_plain(i) for i in old], "newTodos": [_plain(i) for i in items]}


def _plain(item: TodoItem) -> dict[str, str]:
    return {"content": item.content, "status": item.status, "activeForm": item.active_form}


def _result(_output: object) -> ToolResultContent:
    return RESULT


def _enabled() -> bool:
    return not tasks_v2_enabled()


def make_tool() -> Tool[TodoWriteInput]:
    """A fresh TodoWrite tool."""
    return build_tool(
        name=NAME,
        check_permissions=no_permission_needed,
        input_model=TodoWriteInput,
        call=write_todos,
        description=DESCRIPTION,
        max_result_size_chars=100_000,
        strict=True,
        should_defer=True,
        is_enabled=_enabled,
        user_facing_name="",
        search_hint="manage the session task checklist",
        map_result=_result,
        render_tool_use=lambda input: f"{len(input.todos)} todos",
    )


TOOL = make_tool()
