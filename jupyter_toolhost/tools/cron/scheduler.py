"""The scheduler of one kernel: prompts fired on the kernel's asyncio loop, nothing on disk.

Each job is one asyncio task that sleeps until the job's next time and then starts
`run_prompt(prompt)` (the session's hook: it queues the prompt behind any running one and
shows the run in its own output area and the transcript). A firing never overlaps the
previous firing of the same job: a firing due while the previous one still runs is
skipped and counted. Jobs die with the kernel: nothing is persisted, by design.

Jobs end with their conversation (`end`, a hook of the conversation's `Lifetime`): the
schedules are cancelled, a firing that runs or waits its turn is cancelled too, and no job
can be added afterwards. The stop button (`stop_firings`) cancels the firings that run or
wait, and leaves the schedules (they are listed to the person with how to end them).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .schedule import Schedule

RunPrompt = Callable[[str], Awaitable[Any] | Any]
MAX_JOBS = 50

_log = logging.getLogger(__name__)


@dataclass(eq=False)
class CronJob:
    """One scheduled prompt and what it has done so far."""

    id: str
    schedule: Schedule
    prompt: str
    recurring: bool
    created_at: datetime = field(default_factory=datetime.now)
    next_run: datetime | None = None
    runs: int = 0
    skipped: int = 0
    last_error: str | None = None
    _task: asyncio.Task[None] | None = field(default=None, repr=False)
    _running: asyncio.Task[Any] | None = field(default=None, repr=False)

    def describe(self) -> str:
        kind = "recurring" if self.recurring else "one-shot"
        when = self.next_run.strftime("%Y-%m-%d %H:%M:%S") if self.next_run else "-"
        line = (
            f"{self.id}: {self.schedule.describe()}, {kind}; next run {when}; "
            f"ran {self.runs}x; prompt: {self.prompt!r}"
        )
        if self.skipped:
            line += f"; skipped {self.skipped}x (previous run still busy)"
        if self.last_error:
            line += f"; last error: {self.last_error}"
        return line


class CronScheduler:
    """Jobs of one kernel, each driven by its own task on the running event loop."""

    def __init__(self, *, max_jobs: int = MAX_JOBS) -> None:
        self._jobs: dict[str, CronJob] = {}
        self._ids = itertools.count(1)
        self.max_jobs = max_jobs
        self.ended: str | None = None
        """Why the scheduler's conversation ended (None: it has not); `add` then refuses."""

    def add(
        self, schedule: Schedule, prompt: str, run_prompt: RunPrompt, *, recurring: bool = True
    ) -> CronJob:
        """Schedule `prompt`; must be called on the loop the jobs will run on."""
        if self.ended is not None:
            raise ValueError(f"this conversation has ended ({self.ended}); nothing is scheduled")
        if len(self._jobs) >= self.max_jobs:
            raise ValueError(f"at most {self.max_jobs} scheduled jobs; delete one first")
        job = CronJob(f"cron_{next(self._ids)}", schedule, prompt, recurring)
        job.next_run = schedule.next_after(datetime.now())
        self._jobs[job.id] = job
        job._task = asyncio.get_running_loop().create_task(
            self._drive(job, run_prompt), name=f"toolhost-{job.id}"
        )
        return job

    def jobs(self) -> list[CronJob]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> CronJob | None:
        return self._jobs.get(job_id)

    def remove(self, job_id: str) -> CronJob:
        """Unschedule a job (a firing already running finishes); raises `KeyError`.

        Call it on the loop the jobs run on.
        """
        job = self._jobs.pop(job_id)
        if job._task is not None and job._task is not asyncio.current_task():
            job._task.cancel()
        return job

    def clear(self) -> None:
        for job_id in list(self._jobs):
            self.remove(job_id)

    def end(self, reason: str) -> list[str]:
        """The conversation ended: cancel every schedule and every firing that runs or waits
        its turn, and refuse new jobs. Returns a line per job."""
        self.ended = self.ended or reason
        jobs = self.jobs()
        lines = self.going_on(reason)
        self.clear()
        for job in jobs:
            _cancel(job._running)
        return lines

    def stop_firings(self, reason: str) -> list[str]:
        """The stop button: cancel the firings that run or wait their turn; keep the
        schedules. Returns a line per firing cancelled."""
        lines: list[str] = []
        for job in self.jobs():
            if _cancel(job._running):
                lines.append(f"the running firing of scheduled prompt {job.id}: {job.prompt!r}")
        return lines

    def going_on(self, reason: str) -> list[str]:
        """A line per schedule that goes on."""
        return [
            f"scheduled prompt {job.id} ({job.schedule.describe()}): {job.prompt!r}"
            for job in self.jobs()
        ]

    async def _drive(self, job: CronJob, run_prompt: RunPrompt) -> None:
        while job.id in self._jobs and job.next_run is not None:
            delay = (job.next_run - datetime.now()).total_seconds()
            if delay > 0:
                await asyncio.sleep(delay)
            if job.id not in self._jobs:
                return
            if job._running is not None and not job._running.done():
                job.skipped += 1
            else:
                job.runs += 1
                job._running = asyncio.ensure_future(self._fire(job, run_prompt))
            if not job.recurring:
                self._jobs.pop(job.id, None)
                job.next_run = None
                return
            job.next_run = job.schedule.next_after(max(job.next_run, datetime.now()))

    async def _fire(self, job: CronJob, run_prompt: RunPrompt) -> None:
        try:
            outcome = run_prompt(job.prompt)
            if inspect.isawaitable(outcome):
                await outcome
            job.last_error = None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            job.last_error = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                _log.warning("scheduled prompt %s failed: %s", job.id, job.last_error)


def _cancel(task: asyncio.Task[Any] | None) -> bool:
    """Cancel `task` if it is still going; whether it was."""
    if task is None or task.done():
        return False
    task.cancel()
    return True
