"""Background shell tasks: started by `Bash(run_in_background=true)`, read and stopped later.

The registry lives in the session's app state: ``extras["background_tasks"]`` is a mapping
from task id to a frozen `BackgroundTask`, replaced whole (never mutated) on every change,
so it is safe to read from any thread. Each task runs in its own process group with stdout
and stderr appended to one file, `output_path`; a daemon thread waits for it and records
how it ended. The tasks tools (TaskGet/TaskStop/TaskOutput) build on `get_task`,
`list_tasks`, `stop_task` and `read_output`.

The first task of a conversation registers with the conversation's `Lifetime`: when the
conversation ends (`--new`, `%agent reset`, a kernel shutdown) and when the person presses
stop, every running task's process group is killed, with every process below it that left
the group (`core.process.kill_tree`). A daemon that double-forked (orphaned before the
kill) is out of reach of that without the sandbox; in the sandbox (a PID namespace that
dies with its `bwrap`) it ends too. No task starts after the conversation ended.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TypeAlias

from ...core.context import AppState, AppStateStore, ToolUseContext
from ...core.process import kill_tree, spawn_detached
from ...core.types import ToolError

BACKGROUND_TASKS_KEY = "background_tasks"

TaskStatus: TypeAlias = Literal["running", "completed", "failed", "killed"]


@dataclass(frozen=True, slots=True)
class BackgroundTask:
    """One background shell command and how it is doing."""

    id: str
    command: str
    pid: int
    """Also the process group id: `os.killpg(pid, ...)` reaches all its children."""
    output_path: str
    cwd: str
    started_at: float
    description: str | None = None
    status: TaskStatus = "running"
    exit_code: int | None = None
    ended_at: float | None = None


def list_tasks(context: ToolUseContext) -> Mapping[str, BackgroundTask]:
    """Every background task of the session, by id."""
    return context.get_app_state().extras.get(BACKGROUND_TASKS_KEY, {})


def get_task(context: ToolUseContext, task_id: str) -> BackgroundTask | None:
    """One task by id, or None."""
    return list_tasks(context).get(task_id)


def start_task(
    context: ToolUseContext,
    *,
    argv: Sequence[str],
    command: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    description: str | None = None,
    on_exit: Callable[[], str | None] | None = None,
) -> BackgroundTask:
    """Start `argv` detached, register it, and watch it from a daemon thread. `on_exit` runs
    when it has ended; a text it returns is appended to the task's output. Raises
    `ToolError` once the conversation has ended."""
    lifetime = context.get_app_state().lifetime
    if lifetime.ended:
        raise ToolError(f"This conversation has ended ({lifetime.end_reason}); nothing starts.")
    store = context.app_state

    def stop_all(reason: str) -> list[str]:
        return [f"background command {t.id}: {t.command}" for t in stop_running(store)]

    lifetime.register(BACKGROUND_TASKS_KEY, on_end=stop_all, on_interrupt=stop_all)
    task_id = f"bash-{uuid.uuid4().hex[:8]}"
    output_path = context.session_dir() / "tasks" / f"{task_id}.output"
    process = spawn_detached(argv, cwd=cwd, output_path=output_path, env=env)
    task = BackgroundTask(
        id=task_id,
        command=command,
        pid=process.pid,
        output_path=str(output_path),
        cwd=str(cwd),
        started_at=time.time(),
        description=description,
    )
    _put(context, task)
    watcher = threading.Thread(
        target=_watch,
        args=(context, task_id, process, on_exit),
        name=f"toolhost-{task_id}",
        daemon=True,
    )
    watcher.start()
    return task


def stop_task(context: ToolUseContext, task_id: str) -> BackgroundTask:
    """Kill a running task's whole process group; raises `KeyError` for an unknown id."""
    task = get_task(context, task_id)
    if task is None:
        raise KeyError(task_id)
    if task.status != "running":
        return task
    stopped = replace(task, status="killed", ended_at=time.time())
    _put(context, stopped)
    kill_tree(task.pid)
    return stopped


def stop_running(store: AppStateStore) -> list[BackgroundTask]:
    """Kill every running task's process group (a lifetime hook); the tasks stopped."""
    stopped: list[BackgroundTask] = []

    def update(state: AppState) -> AppState:
        stopped.clear()
        tasks = dict(state.extras.get(BACKGROUND_TASKS_KEY, {}))
        for task_id, task in tasks.items():
            if task.status == "running":
                tasks[task_id] = replace(task, status="killed", ended_at=time.time())
                stopped.append(task)
        return replace(state, extras={**state.extras, BACKGROUND_TASKS_KEY: tasks})

    store.update(update)
    for task in stopped:
        kill_tree(task.pid)
    return stopped


def read_output(task: BackgroundTask, *, max_bytes: int = 30_000) -> tuple[str, int]:
    """The last `max_bytes` of a task's output, and the output's total size in bytes."""
    path = Path(task.output_path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            handle.seek(max(size - max_bytes, 0))
            data = handle.read()
    except OSError:
        return "", 0
    return data.decode("utf-8", errors="replace"), size


def _put(context: ToolUseContext, task: BackgroundTask) -> None:
    def update(state: AppState) -> AppState:
        tasks = dict(state.extras.get(BACKGROUND_TASKS_KEY, {}))
        tasks[task.id] = task
        return replace(state, extras={**state.extras, BACKGROUND_TASKS_KEY: tasks})

    context.set_app_state(update)


def _watch(
    context: ToolUseContext,
    task_id: str,
    process: subprocess.Popen[bytes],
    on_exit: Callable[[], str | None] | None,
) -> None:
    code = process.wait()
    text = on_exit() if on_exit is not None else None
    if text:
        task = get_task(context, task_id)
        if task is not None:
            with contextlib.suppress(OSError), open(task.output_path, "a") as handle:
                handle.write(f"\n{text}\n")

    def update(state: AppState) -> AppState:
        tasks = dict(state.extras.get(BACKGROUND_TASKS_KEY, {}))
        task = tasks.get(task_id)
        if task is None:
            return state
        status: TaskStatus = "completed" if code == 0 else "failed"
        if task.status == "killed":
            status = "killed"
        tasks[task_id] = replace(
            task, status=status, exit_code=code, ended_at=task.ended_at or time.time()
        )
        return replace(state, extras={**state.extras, BACKGROUND_TASKS_KEY: tasks})

    context.set_app_state(update)
