"""Background work of a session that runs on the kernel's event loop: the task registry.

A background subagent (or anything else that runs on after the call that started it as an
asyncio task) registers here and gets a task id; each task brings its own `stop` action.
Background Bash commands keep their own registry (`tools/bash/background.py`, processes
watched from threads); `TaskGet`, `TaskList` and `TaskStop` read both. One registry per
session, shared with the session's subagents, found with `background_tasks(context)`.

The registry registers with the conversation's `Lifetime` when it is made: when the
conversation ends, and when the person presses stop, every running task is stopped at once
(its `stop_now`: a background subagent's abort signal fires and its task is cancelled, which
kills the process groups of the commands it runs). No task starts after the end.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from ...core.context import ToolUseContext
from .state import shared

TaskStatus: TypeAlias = Literal["running", "completed", "failed", "stopped"]
StopAction: TypeAlias = Callable[[], Awaitable[None] | None]
REGISTRY_KEY = "async_tasks"
OUTPUT_TAIL_CHARS = 4_000


@dataclass
class BackgroundTask:
    """One piece of background work: what it is, how it is going, how to stop it."""

    id: str
    kind: str
    """"bash", "agent", ... — shown to people and the model, never branched on."""
    description: str
    stop_action: StopAction | None = None
    stop_now: Callable[[], None] | None = None
    """Stops the task at once, without awaiting anything (the lifetime hooks use it); None:
    `stop_action` is scheduled on the running loop instead."""
    output_path: Path | None = None
    """A file the task writes its output to, if it has one."""
    status: TaskStatus = "running"
    result: str | None = None
    """The final text (a subagent's report) or a short summary (an exit code)."""
    exit_code: int | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    owner: str | None = None
    """The agent that started it (None: the main session)."""
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def finish(
        self, status: TaskStatus, *, result: str | None = None, exit_code: int | None = None
    ) -> None:
        """Record the end of the task (only the first end counts)."""
        if self.status != "running":
            return
        self.status = status
        self.result = result
        self.exit_code = exit_code
        self.ended_at = time.time()
        loop = _loop_of(self.done)
        if loop is None:
            self.done.set()
        else:
            loop.call_soon_threadsafe(self.done.set)

    async def wait(self, seconds: float | None = None) -> bool:
        """Wait until the task ends; True if it did within `seconds`."""
        try:
            await asyncio.wait_for(self.done.wait(), seconds)
        except TimeoutError:
            return self.status != "running"
        return True

    def output_tail(self, limit: int = OUTPUT_TAIL_CHARS) -> str:
        """The last `limit` characters of the output file ('' without one)."""
        if self.output_path is None:
            return ""
        try:
            with open(self.output_path, "rb") as handle:
                handle.seek(0, 2)
                size = handle.tell()
                handle.seek(max(0, size - limit * 4))
                data = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return data[-limit:]

    def describe(self) -> str:
        """A few lines the model can read."""
        elapsed = (self.ended_at or time.time()) - self.started_at
        lines = [
            f"Task {self.id} ({self.kind}): {self.description}",
            f"Status: {self.status} ({elapsed:.1f} s)",
        ]
        if self.exit_code is not None:
            lines.append(f"Exit code: {self.exit_code}")
        if self.owner:
            lines.append(f"Owner: {self.owner}")
        if self.output_path is not None:
            lines.append(f"Output file: {self.output_path}")
        if self.result:
            lines.append(f"Result:\n{self.result}")
        tail = self.output_tail()
        if tail:
            lines.append(f"Output (last {len(tail)} characters):\n{tail}")
        return "\n".join(lines)


def _loop_of(event: asyncio.Event) -> asyncio.AbstractEventLoop | None:
    loop = getattr(event, "_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


class BackgroundTasks:
    """The registry of one session's background tasks."""

    def __init__(self) -> None:
        self._tasks: dict[str, BackgroundTask] = {}
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self.ended: str | None = None
        """Why the conversation ended (None: it has not); `register` then refuses."""

    def register(
        self,
        *,
        kind: str,
        description: str,
        stop: StopAction | None = None,
        output_path: Path | None = None,
        owner: str | None = None,
        task_id: str | None = None,
        stop_now: Callable[[], None] | None = None,
    ) -> BackgroundTask:
        """Add a running task; its id is `task_id` or `<kind>_<n>`. Raises `ValueError`
        once the conversation has ended."""
        with self._lock:
            if self.ended is not None:
                raise ValueError(f"this conversation has ended ({self.ended}); nothing starts")
            new_id = task_id or f"{kind}_{next(self._counter)}"
            if new_id in self._tasks:
                raise ValueError(f"a background task with id {new_id!r} exists already")
            task = BackgroundTask(
                id=new_id,
                kind=kind,
                description=description,
                stop_action=stop,
                stop_now=stop_now,
                output_path=output_path,
                owner=owner,
            )
            self._tasks[new_id] = task
            return task

    def get(self, task_id: str) -> BackgroundTask | None:
        with self._lock:
            return self._tasks.get(task_id)

    def all(self) -> list[BackgroundTask]:
        """Every task, oldest first."""
        with self._lock:
            return list(self._tasks.values())

    def running(self) -> list[BackgroundTask]:
        return [task for task in self.all() if task.status == "running"]

    async def stop(self, task_id: str) -> BackgroundTask:
        """Stop a running task; raises `KeyError` for an unknown id, `ValueError` if it ended."""
        task = self.get(task_id)
        if task is None:
            raise KeyError(task_id)
        if task.status != "running":
            raise ValueError(f"task {task_id} is not running (status: {task.status})")
        if task.stop_action is not None:
            outcome = task.stop_action()
            if inspect.isawaitable(outcome):
                await outcome
        task.finish("stopped", result=task.result)
        return task

    async def stop_all(self) -> None:
        """Stop everything still running (a session closing)."""
        for task in self.running():
            try:
                await self.stop(task.id)
            except (KeyError, ValueError):
                continue

    def stop_all_now(self, reason: str) -> list[str]:
        """Stop every running task at once (a lifetime hook); a line per task stopped."""
        lines: list[str] = []
        for task in self.running():
            if task.stop_now is not None:
                task.stop_now()
            elif task.stop_action is not None:
                _schedule(task.stop_action())
            task.finish("stopped", result=task.result)
            lines.append(f"background {task.kind} {task.id}: {task.description}")
        return lines

    def end(self, reason: str) -> list[str]:
        """The conversation ended: stop everything and refuse new tasks."""
        with self._lock:
            self.ended = self.ended or reason
        return self.stop_all_now(reason)


def _schedule(outcome: Awaitable[None] | None) -> None:
    """Let an async stop action run on the running loop (closed unrun without one)."""
    if outcome is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no running loop (the interpreter is exiting)
        if inspect.iscoroutine(outcome):
            outcome.close()
        return
    task = loop.create_task(_awaited(outcome))
    _stopping.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(_stopping.discard)


_stopping: set[asyncio.Task[None]] = set()


async def _awaited(outcome: Awaitable[None]) -> None:
    await outcome


def background_tasks(context: ToolUseContext) -> BackgroundTasks:
    """The session's registry (created on first use, with its lifetime hooks)."""
    lifetime = context.get_app_state().lifetime

    def make() -> BackgroundTasks:
        registry = BackgroundTasks()
        registry.ended = lifetime.end_reason  # made after the end: nothing starts
        lifetime.register(REGISTRY_KEY, on_end=registry.end, on_interrupt=registry.stop_all_now)
        return registry

    return shared(context, REGISTRY_KEY, make)
