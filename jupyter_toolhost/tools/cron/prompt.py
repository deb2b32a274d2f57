"""What the model is told about CronCreate, CronList and CronDelete."""

from __future__ import annotations

CREATE = "CronCreate"
LIST = "CronList"
DELETE = "CronDelete"

LIFETIME = (
    "Scheduled jobs belong to this conversation: they are not saved anywhere, and they end "
    "when the conversation ends (a new conversation, a reset, a kernel restart or shutdown)."
)

CREATE_DESCRIPTION = f"""Schedules a prompt to run in this session later or repeatedly.

`cron` is a 5-field cron expression in the kernel's local time (minute hour day-of-month
month day-of-week, e.g. "*/10 * * * *" every ten minutes, "0 9 * * 1-5" at 9:00 on
weekdays), a shorthand (@hourly, @daily, @weekly, @monthly) or an interval "@every 30s",
"@every 5m", "@every 1h30m". Each time it fires, `prompt` is run as if the user had sent
it (after any prompt that is running); its output appears in the session's scheduled-runs
area and its transcript. `recurring: false` fires once. A firing that comes while the
previous one still runs is skipped. {LIFETIME}"""

LIST_DESCRIPTION = "Lists the scheduled prompts of this kernel with their next run times."

DELETE_DESCRIPTION = "Deletes a scheduled prompt by its id (from CronCreate or CronList)."

NO_RUNNER = (
    "This session cannot run scheduled prompts: no `run_prompt` hook is attached to it "
    "(scheduling works in a notebook session or a Session that provides one)."
)
