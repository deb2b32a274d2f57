"""What the model is told about TodoWrite."""

from __future__ import annotations

NAME = "TodoWrite"

DESCRIPTION = """Writes the session's checklist: the whole list of todos, each with its status.

Use it for work with three or more steps, or when the user gives you several things to
do; skip it for a single small task. Each call replaces the whole list, so send every
item each time. Each todo has:
- `content`: what to do, in the imperative ("Run the tests");
- `activeForm`: the same in the present continuous, shown while it runs ("Running the tests");
- `status`: `pending`, `in_progress` or `completed`.

Keep exactly one item `in_progress` while you work; mark an item `completed` as soon as it
is done (not in batches), and never mark something completed that failed or is partial.
The list is shown to the user as a live checklist. When every item is completed, the list
is cleared."""

RESULT = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list "
    "to track your progress. Please proceed with the current tasks if applicable"
)
