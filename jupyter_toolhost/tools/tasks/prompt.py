"""What the model is told about the Task tools."""

from __future__ import annotations

TASKS_V2_ENV = "JUPYTER_TOOLHOST_TASKS_V2"
"""Set to 1 to use the Task tools instead of TodoWrite for the session's checklist."""

CREATE = "TaskCreate"
UPDATE = "TaskUpdate"
GET = "TaskGet"
LIST = "TaskList"
STOP = "TaskStop"

CREATE_DESCRIPTION = """Creates a task in the task list, to plan and track multi-step work.

Use it for work with three or more distinct steps, or when the user gives you several
things to do. Give each task a short imperative `subject` ("Run the tests"), a
`description` of what done means, and an `activeForm` shown while it runs ("Running the
tests"). New tasks are `pending`; set dependencies and owners with TaskUpdate. Tasks are
shared with subagents and, inside a team, with every teammate."""

UPDATE_DESCRIPTION = """Updates a task: its status, subject, description, owner or dependencies.

- Mark a task `in_progress` before starting it and `completed` as soon as it is done; keep
  only one task in progress at a time. `deleted` removes it.
- A task cannot be completed while tasks that block it are unfinished.
- `addBlocks` / `addBlockedBy` record dependencies (ids of other tasks); cycles are refused.
- `owner` names the agent working on it (a teammate's name inside a team)."""

GET_DESCRIPTION = """Shows one task in full: a work item of the task list by its id, or a
background task (a background Bash command or subagent) with its status, result and the
tail of its output."""

LIST_DESCRIPTION = """Lists every task: the work items of the task list (id, status, owner,
open blockers) and the background tasks of this session with their status. Use it to find
the next task to work on: pending, unowned and not blocked."""

STOP_DESCRIPTION = """Stops a running background task by its id: a background Bash command
(its whole process group is killed) or a background subagent (it is cancelled and its
calls are stopped). Returns the task's final state."""

CREATED = "Task #{id} created successfully: {subject}"
