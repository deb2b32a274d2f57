"""Running subprocesses for tools: each in its own process group, output kept off the heap.

`run_process` sends a child's stdout and stderr straight to files, so output of any size
never passes through this process's memory; after the child exits, a stream that fits the
budget is read back (and its file removed), a bigger one stays on disk and only a preview is
read. On timeout, abort (`context.abort`, through `AbortSignal.add_callback`) or
cancellation the whole process group is killed. `run_capture` is the small-output variant
(pipes, bounded read) for helpers like ripgrep; `spawn_detached` starts a background process
that outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .context import AbortSignal
from .private import private_file, private_folder
from .redaction import Redactor

PREVIEW_BYTES = 2_000
"""How much of a stream that went over the budget is read back as its preview."""
TAIL_BYTES = 8_192
"""How much of the end of an output file `tail_lines` reads (never the whole file)."""
REDACTED_FILE_LIMIT = 64 * 1024 * 1024
"""The largest saved output that is redacted in place (about 0.3 s of CPU per 10 MB): a
bigger one is left as written, and what a tool reads of it is redacted like any result."""
TAIL_LINES = 5
TAIL_LINE_CHARS = 200


@dataclass(frozen=True, slots=True)
class OutputSoFar:
    """What a running process has written, reported about once a second."""

    size: int
    """Bytes written to stdout and stderr together."""
    tail: tuple[str, ...]
    """The last non-empty lines of stdout (of stderr while stdout is empty), each cut to
    `TAIL_LINE_CHARS` characters."""


def tail_lines(
    path: Path, *, lines: int = TAIL_LINES, width: int = TAIL_LINE_CHARS
) -> tuple[str, ...]:
    """The last `lines` non-empty lines of a file, read from its last `TAIL_BYTES` only."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            start = max(0, size - TAIL_BYTES)
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return ()
    text = data.decode("utf-8", errors="replace")
    rows = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if start > 0:
        rows = rows[1:]  # the first row may be the end of a longer line
    kept = [row.rstrip() for row in rows if row.strip()][-lines:]
    return tuple(row if len(row) <= width else row[: width - 1] + "…" for row in kept)


@dataclass(frozen=True, slots=True)
class CapturedStream:
    """One output stream of a finished process."""

    text: str
    """The whole output when it fit the budget; else the first `PREVIEW_BYTES` of it."""
    size: int
    """Bytes the process wrote."""
    path: Path | None = None
    """The file holding the whole output, when it went over the budget."""

    @property
    def spilled(self) -> bool:
        return self.path is not None


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """How a process ended and what it wrote."""

    exit_code: int | None
    stdout: CapturedStream
    stderr: CapturedStream
    elapsed: float
    timed_out: bool = False
    aborted: str | None = None
    """The abort reason when the call was aborted (the process group was killed)."""


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Kill the process group led by `pid` (started with `start_new_session`); never raises."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, sig)


def kill_tree(pid: int) -> None:
    """Kill the process group led by `pid` and every process below `pid`, with the groups
    they lead: a child that left the group (``setsid cmd &``) dies too, as long as its
    parent chain still leads to `pid` when this runs. One that was orphaned before (a
    daemon that double-forked) is out of reach; the sandbox's PID namespace is not.
    Never raises; never touches this process's own group."""
    below = _descendants(pid)
    kill_group(pid)
    own = os.getpgrp()
    for child in below:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            group = os.getpgid(child)
            if group != own:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.kill(child, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, read from ``/proc`` (none where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    for name in entries:
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
            parent = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != os.getpid():
                found.append(child)
                todo.append(child)
    return found


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    output_dir: Path,
    name: str,
    budget_bytes: int,
    stderr_budget_bytes: int | None = None,
    time_limit: float | None = None,
    abort: AbortSignal | None = None,
    env: Mapping[str, str] | None = None,
    progress: Callable[[OutputSoFar], None] | None = None,
    redactor: Redactor | None = None,
) -> ProcessResult:
    """Run `argv` to completion in a new process group, stdout and stderr going to files.

    The files are `<output_dir>/<name>.txt` and `<name>.stderr.txt`; each is removed again
    when its stream fits its budget (`budget_bytes`; stderr's defaults to the same). After
    `time_limit` seconds the group is killed. `progress(OutputSoFar)` is called about once
    a second while the process runs and its output grows (reading only the files' ends).
    A file that stays (over its budget) is redacted in place with `redactor` before its
    preview is read (up to `REDACTED_FILE_LIMIT`), in a worker thread, so the loop goes on.
    """
    out_path, err_path = _output_paths(output_dir, name)
    started = time.monotonic()
    with private_file(out_path) as out_file, private_file(err_path) as err_file:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=os.fspath(cwd),
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,
        )
    pid = process.pid
    reasons: list[str] = []

    def stop() -> None:
        # The whole tree while the shell lives (a `setsid` child too); once it has exited
        # (and its pid may be reused), its group only, as before.
        if process.returncode is None:
            kill_tree(pid)
        else:
            kill_group(pid)

    def on_abort(reason: str) -> None:
        reasons.append(reason)
        stop()

    remove = abort.add_callback(on_abort) if abort is not None else (lambda: None)
    reporter = _start_reporter(out_path, err_path, progress) if progress is not None else None
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), time_limit)
        except TimeoutError:
            timed_out = True
            stop()
            await process.wait()
    except BaseException:
        stop()
        raise
    finally:
        remove()
        if reporter is not None:
            reporter.cancel()
    stdout, stderr = await asyncio.to_thread(
        lambda: (
            _collect(out_path, budget_bytes, redactor),
            _collect(err_path, stderr_budget_bytes or budget_bytes, redactor),
        )
    )
    return ProcessResult(
        exit_code=process.returncode,
        stdout=stdout,
        stderr=stderr,
        elapsed=time.monotonic() - started,
        timed_out=timed_out,
        aborted=reasons[0] if reasons else None,
    )


def _output_paths(output_dir: Path, name: str) -> tuple[Path, Path]:
    private_folder(output_dir)
    return output_dir / f"{name}.txt", output_dir / f"{name}.stderr.txt"


def _start_reporter(
    out_path: Path, err_path: Path, progress: Callable[[OutputSoFar], None]
) -> asyncio.Task[None]:
    async def report() -> None:
        last = (-1, -1)
        while True:
            await asyncio.sleep(1.0)
            sizes = (_size(out_path), _size(err_path))
            if sizes == last:
                continue
            last = sizes
            tail = tail_lines(out_path) if sizes[0] else tail_lines(err_path)
            with contextlib.suppress(Exception):
                progress(OutputSoFar(size=sum(sizes), tail=tail))

    return asyncio.ensure_future(report())


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _collect(path: Path, budget_bytes: int, redactor: Redactor | None = None) -> CapturedStream:
    size = _size(path)
    if size <= budget_bytes:
        data = path.read_bytes() if size else b""
        with contextlib.suppress(OSError):
            path.unlink()
        return CapturedStream(text=data.decode("utf-8", errors="replace"), size=size)
    if redactor is not None and size <= REDACTED_FILE_LIMIT:
        with contextlib.suppress(OSError):  # the output stays; its preview is still redacted
            redactor.file(path)
    with open(path, "rb") as handle:
        head = handle.read(PREVIEW_BYTES)
    return CapturedStream(text=head.decode("utf-8", errors="ignore"), size=size, path=path)


@dataclass(frozen=True, slots=True)
class CaptureResult:
    """Output of `run_capture`: bytes read up to the cap."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool
    """The cap was reached and the process was killed."""


async def run_capture(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    max_bytes: int,
    time_limit: float | None = None,
    abort: AbortSignal | None = None,
    env: Mapping[str, str] | None = None,
) -> CaptureResult:
    """Run `argv`, keeping at most `max_bytes` of stdout (the process is killed past it).

    Output goes to unlinked temporary files, read once the process has exited: a search that
    prints thousands of small writes (ripgrep does, one per file) would otherwise wake this
    event loop for each one, and that reading competed with the search for the CPU. The cap
    is checked every `CAP_POLL_SECONDS` from the file's size. Raises `TimeoutError` after
    `time_limit` seconds; the process group is killed on every early exit.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=os.fspath(cwd) if cwd is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
        pid = process.pid
        remove = abort.add_callback(lambda _r: kill_group(pid)) if abort is not None else None
        try:
            truncated = await asyncio.wait_for(_wait_capped(process, out, max_bytes), time_limit)
        finally:
            if remove is not None:
                remove()
            if process.returncode is None:
                kill_group(pid)
                with contextlib.suppress(Exception):
                    await process.wait()
        out.seek(0)
        stdout = out.read(max_bytes)
        err.seek(0)
        stderr = err.read(STDERR_KEEP_BYTES)
    return CaptureResult(process.returncode, stdout, stderr, truncated)


CAP_POLL_SECONDS = 0.05
STDERR_KEEP_BYTES = 1 << 16


async def _wait_capped(process: asyncio.subprocess.Process, out: IO[bytes], max_bytes: int) -> bool:
    """Wait for `process` to exit; kill it (and say so) once `out` holds `max_bytes`."""
    exited = asyncio.ensure_future(process.wait())
    try:
        while True:
            done, _ = await asyncio.wait({exited}, timeout=CAP_POLL_SECONDS)
            if done:
                return os.fstat(out.fileno()).st_size > max_bytes
            if os.fstat(out.fileno()).st_size >= max_bytes:
                kill_group(process.pid)
                await exited
                return True
    finally:
        exited.cancel()


def spawn_detached(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    output_path: Path,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a background process in its own session, stdout and stderr appended to a file."""
    private_folder(output_path.parent)
    with private_file(output_path, append=True) as output:
        return subprocess.Popen(
            list(argv),
            cwd=os.fspath(cwd),
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
