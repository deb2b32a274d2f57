"""What the model is told about TeamCreate and TeamDelete."""

from __future__ import annotations

CREATE = "TeamCreate"
DELETE = "TeamDelete"

CREATE_DESCRIPTION = """Creates a team: a named group of subagents that share a task list and
message each other.

After creating it, plan the work as tasks (TaskCreate) and start members with
Agent{team_name, name, prompt, run_in_background: true}; each member sees the shared task
list, claims tasks by setting itself as owner, and talks to teammates with SendMessage (by
name). You are the team's lead ("lead"); read members' reports with TaskGet. While the
team exists, your task list is the team's. Delete it with TeamDelete when the work is done."""

DELETE_DESCRIPTION = """Deletes a team and its task list. Fails while members are still
working: wait for them, or stop them with TaskStop (or pass `stop_members: true`)."""
