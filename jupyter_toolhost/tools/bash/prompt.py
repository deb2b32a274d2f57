"""What the model is told about Bash."""

from __future__ import annotations

NAME = "Bash"

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
STDOUT_BUDGET_BYTES = 30_000
STDERR_BUDGET_BYTES = 10_000

DESCRIPTION = f"""Executes a shell command (bash) and returns its output.

Usage:
- The working directory persists between calls: a `cd` in one command carries over to the
  next. It starts at the session's working directory.
- `timeout` is in milliseconds: default {DEFAULT_TIMEOUT_MS} ({DEFAULT_TIMEOUT_MS // 60_000}
  minutes), at most {MAX_TIMEOUT_MS} ({MAX_TIMEOUT_MS // 60_000} minutes). On timeout the
  command and every process it started are killed.
- stdout over {STDOUT_BUDGET_BYTES // 1000} KB (or stderr over {STDERR_BUDGET_BYTES // 1000} KB)
  is saved to a file; you get its path and a preview, and can Read or Grep it.
- A non-zero exit code is reported as an error, with the exit code and stderr.
- `run_in_background: true` starts the command and returns at once with a task id and the
  file its output goes to; Read that file (or use the task tools) to follow it, and Sleep to
  wait. Do not append `&` yourself. The command belongs to this conversation: the user's
  stop button and the end of the conversation kill it with every process it started.
- `description`: a short (5-10 word) description of what the command does.
- The command gets no standard input: never run interactive programs (editors, `git rebase
  -i`, pagers).
- Prefer the dedicated tools over shell equivalents: Read (not cat/head/tail), Grep (not
  grep/rg), Glob (not find/ls -R), Edit/Write (not sed/echo >).
- Quote paths that contain spaces. Chain dependent commands with `&&`; run independent
  ones as separate calls in the same response."""
