"""What the model is told about Sleep."""

from __future__ import annotations

NAME = "Sleep"

MAX_DURATION_MS = 600_000

DESCRIPTION = f"""Waits for a while, then returns.

Usage:
- Use it to poll work running in the background (a `run_in_background` Bash command):
  sleep, then read its output file again. Do not sleep with Bash.
- `duration_ms` is in milliseconds, at most {MAX_DURATION_MS} ({MAX_DURATION_MS // 60_000}
  minutes).
- The wait ends early, as an error, when the user interrupts."""
