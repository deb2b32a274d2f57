"""The task list of the Task tools: work items with status, owner and dependencies.

Items live in the app state (`extras["task_lists"]`, one list per team, `"session"` for
the main one), replaced whole on every change, so front ends can subscribe to them and
concurrent changes never interleave. Ids are small numbers as strings ("1", "2", ...),
never reused within a list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from ...core.context import AppState, ToolUseContext
from ...core.types import ToolInputError

ItemStatus: TypeAlias = Literal["pending", "in_progress", "completed"]
LISTS_KEY = "task_lists"
ACTIVE_TEAM_KEY = "active_team"
TEAM_OPTION = "team_name"
"""`context.options.extras[TEAM_OPTION]`: the team a subagent belongs to."""
DEFAULT_LIST = "session"


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One task of the list."""

    id: str
    subject: str
    description: str = ""
    active_form: str | None = None
    status: ItemStatus = "pending"
    owner: str | None = None
    blocks: tuple[str, ...] = ()
    blocked_by: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "subject": self.subject,
            "description": self.description,
            "activeForm": self.active_form,
            "status": self.status,
            "owner": self.owner,
            "blocks": list(self.blocks),
            "blockedBy": list(self.blocked_by),
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class TaskList:
    """A whole list, replaced on every change."""

    items: tuple[WorkItem, ...] = ()
    next_id: int = 1

    def get(self, item_id: str) -> WorkItem | None:
        return next((item for item in self.items if item.id == item_id), None)


def list_name(context: ToolUseContext) -> str:
    """Which list a call works on: its team's, the session's active team's, or the session's."""
    team = context.options.extras.get(TEAM_OPTION)
    if isinstance(team, str) and team:
        return team
    active = context.get_app_state().extras.get(ACTIVE_TEAM_KEY)
    return active if isinstance(active, str) and active else DEFAULT_LIST


def read_list(context: ToolUseContext, name: str | None = None) -> TaskList:
    lists = context.get_app_state().extras.get(LISTS_KEY) or {}
    return lists.get(name or list_name(context), TaskList())


def change_list(
    context: ToolUseContext, change: Callable[[TaskList], TaskList], name: str | None = None
) -> TaskList:
    """Apply `change` to the list atomically; exceptions from `change` leave it untouched."""
    key = name or list_name(context)
    changed: list[TaskList] = []

    def update(state: AppState) -> AppState:
        lists = dict(state.extras.get(LISTS_KEY) or {})
        new = change(lists.get(key, TaskList()))
        changed.append(new)
        lists[key] = new
        return replace(state, extras={**state.extras, LISTS_KEY: lists})

    context.set_app_state(update)
    return changed[-1]


def drop_list(context: ToolUseContext, name: str) -> None:
    def update(state: AppState) -> AppState:
        lists = {k: v for k, v in (state.extras.get(LISTS_KEY) or {}).items() if k != name}
        return replace(state, extras={**state.extras, LISTS_KEY: lists})

    context.set_app_state(update)


def add_item(tasks: TaskList, item: WorkItem) -> TaskList:
    new = replace(item, id=str(tasks.next_id))
    return TaskList(items=(*tasks.items, new), next_id=tasks.next_id + 1)


def require(tasks: TaskList, item_id: str) -> WorkItem:
    item = tasks.get(item_id)
    if item is None:
        known = ", ".join(i.id for i in tasks.items) or "none"
        raise ToolInputError(f"No task with id {item_id!r} (known ids: {known}).")
    return item


def put(tasks: TaskList, item: WorkItem) -> TaskList:
    return replace(tasks, items=tuple(item if i.id == item.id else i for i in tasks.items))


def link(tasks: TaskList, blocker: str, blocked: str) -> TaskList:
    """Record that `blocker` must finish before `blocked` (both directions)."""
    if blocker == blocked:
        raise ToolInputError(f"Task {blocker} cannot block itself.")
    first, second = require(tasks, blocker), require(tasks, blocked)
    if _reaches(tasks, blocked, blocker):
        raise ToolInputError(f"Task {blocked} already (indirectly) blocks {blocker}: a cycle.")
    tasks = put(tasks, replace(first, blocks=_with(first.blocks, blocked)))
    return put(tasks, replace(second, blocked_by=_with(second.blocked_by, blocker)))


def remove(tasks: TaskList, item_id: str) -> TaskList:
    """Delete an item and every reference to it."""
    require(tasks, item_id)
    kept = tuple(
        replace(
            item,
            blocks=tuple(b for b in item.blocks if b != item_id),
            blocked_by=tuple(b for b in item.blocked_by if b != item_id),
        )
        for item in tasks.items
        if item.id != item_id
    )
    return replace(tasks, items=kept)


def open_blockers(tasks: TaskList, item: WorkItem) -> list[str]:
    """The ids of unfinished tasks that block `item`."""
    return [b for b in item.blocked_by if (other := tasks.get(b)) and other.status != "completed"]


def _with(values: tuple[str, ...], value: str) -> tuple[str, ...]:
    return values if value in values else (*values, value)


def _reaches(tasks: TaskList, start: str, goal: str) -> bool:
    seen: set[str] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        if current == goal:
            return True
        if current in seen:
            continue
        seen.add(current)
        item = tasks.get(current)
        if item is not None:
            stack.extend(item.blocks)
    return False
