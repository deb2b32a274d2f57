"""CronCreate, CronList, CronDelete: prompts scheduled on the kernel's event loop.

The scheduler (`CronScheduler`) is one per session, in `extras["cron"]` of the app state;
firing runs `context.options.run_prompt(prompt)`, a hook the session provides.
Nothing survives the kernel, and the tools say so. The scheduler registers with the
conversation's `Lifetime` when it is made: the jobs end with the conversation (`--new`,
`%agent reset`, a kernel shutdown), and the stop button cancels a firing that runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from ..tasks.state import shared
from .prompt import (
    CREATE,
    CREATE_DESCRIPTION,
    DELETE,
    DELETE_DESCRIPTION,
    LIFETIME,
    LIST,
    LIST_DESCRIPTION,
    NO_RUNNER,
)
from .schedule import Schedule, ScheduleError, parse_schedule
from .scheduler import CronJob, CronScheduler

__all__ = ["CronJob", "CronScheduler", "Schedule", "make_tools", "parse_schedule", "scheduler"]

SCHEDULER_KEY = "cron"
MIN_INTERVAL_KEY = "cron_min_interval_s"
"""`context.options.extras[MIN_INTERVAL_KEY]`: the shortest `@every` interval (default 1 s)."""


def scheduler(context: ToolUseContext) -> CronScheduler:
    """The session's scheduler (created on first use, with its lifetime hooks)."""
    lifetime = context.get_app_state().lifetime

    def make() -> CronScheduler:
        cron = CronScheduler()
        cron.ended = lifetime.end_reason  # made after the end: it schedules nothing
        lifetime.register(
            SCHEDULER_KEY, on_end=cron.end, on_interrupt=cron.stop_firings, going_on=cron.going_on
        )
        return cron

    return shared(context, SCHEDULER_KEY, make)


class CronCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description='A cron expression or "@every <interval>".')
    prompt: str = Field(description="The prompt to run each time it fires.")
    recurring: bool = Field(default=True, description="False: fire once, then delete.")


class CronListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CronDeleteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The job's id.")


async def create_job(input: CronCreateInput, context: ToolUseContext) -> str:
    run_prompt = context.options.run_prompt
    if run_prompt is None:
        raise ToolError(NO_RUNNER)
    if not input.prompt.strip():
        raise ToolInputError("The prompt is empty.")
    minimum = float(context.options.extras.get(MIN_INTERVAL_KEY, 1.0))
    try:
        schedule = parse_schedule(input.cron, min_interval=minimum)
    except ScheduleError as exc:
        raise ToolInputError(f"Cannot schedule: {exc}") from None
    try:
        job = scheduler(context).add(schedule, input.prompt, run_prompt, recurring=input.recurring)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    when = job.next_run.strftime("%Y-%m-%d %H:%M:%S") if job.next_run else "-"
    kind = "recurring" if job.recurring else "one-shot"
    return f"Scheduled {kind} job {job.id} ({schedule.describe()}); next run {when}. {LIFETIME}"


async def list_jobs(input: CronListInput, context: ToolUseContext) -> str:
    jobs = scheduler(context).jobs()
    if not jobs:
        return f"No scheduled jobs. {LIFETIME}"
    return "\n".join([*(job.describe() for job in jobs), LIFETIME])


async def delete_job(input: CronDeleteInput, context: ToolUseContext) -> str:
    cron = scheduler(context)
    try:
        job = cron.remove(input.id)
    except KeyError:
        known = ", ".join(j.id for j in cron.jobs()) or "none"
        raise ToolInputError(f"No scheduled job {input.id!r} (jobs: {known}).") from None
    return f"Deleted job {job.id} ({job.schedule.describe()}; it ran {job.runs}x)."


def make_tools() -> list[Tool[Any]]:
    """Fresh CronCreate, CronList and CronDelete tools."""
    return [
        build_tool(
            name=CREATE,
            input_model=CronCreateInput,
            call=create_job,
            description=CREATE_DESCRIPTION,
            should_defer=True,
            render_tool_use=lambda input: f"{input.cron}: {input.prompt}",
            search_hint="schedule a recurring prompt cron timer",
        ),
        build_tool(
            name=LIST,
            input_model=CronListInput,
            call=list_jobs,
            description=LIST_DESCRIPTION,
            read_only=True,
            concurrency_safe=True,
            should_defer=True,
            search_hint="list scheduled prompts cron",
        ),
        build_tool(
            name=DELETE,
            input_model=CronDeleteInput,
            call=delete_job,
            description=DELETE_DESCRIPTION,
            should_defer=True,
            search_hint="delete cancel scheduled prompt cron",
        ),
    ]
