"""What the model is told about EnterWorktree and ExitWorktree."""

from __future__ import annotations

ENTER = "EnterWorktree"
EXIT = "ExitWorktree"

ENTER_DESCRIPTION = """Creates a git worktree on a new branch and moves the session into it.

Use it when the user asks to work in a worktree, or to try a change in isolation without
touching their checkout. The worktree is created at `.toolhost/worktrees/<name>` in the
repository, on a new branch `toolhost/<name>` starting at the current commit; the session's
working directory moves into it (same sub-directory). Only one worktree at a time; leave it
with ExitWorktree. Fails outside a git repository or in one without commits."""

EXIT_DESCRIPTION = """Leaves the worktree created by EnterWorktree and returns the session to
the original working directory.

`action`: `keep` leaves the worktree and its branch on disk (to come back or merge later);
`remove` deletes the worktree and its branch. Removing refuses when the worktree has
uncommitted changes or new commits, unless `discard_changes` is true — ask the user before
discarding work."""
