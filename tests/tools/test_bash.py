"""Bash with real subprocesses: cwd persistence, timeouts, aborts, big output, background."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import SandboxOptions, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import bash, builtin_tools
from jupyter_toolhost.tools.bash import background
from jupyter_toolhost.tools.bash.prompt import STDOUT_BUDGET_BYTES
from jupyter_toolhost.tools.bash.readonly import is_read_only_command


def make_context(tmp_path: Path, **sandbox: Any) -> ToolUseContext:
    """A context in `tmp_path`; `sandbox` are `SandboxOptions` fields."""
    options = ToolUseOptions(tools=builtin_tools(), sandbox=SandboxOptions(**sandbox))
    return ToolUseContext(options=options, cwd=tmp_path)


async def run(
    context: ToolUseContext, call_input: dict[str, Any], call_id: str = "toolu_1"
) -> ToolResult:
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    return await pipeline.run(ToolCall(id=call_id, name="Bash", input=call_input), context)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def host_pid(marker: str, seconds: float = 10.0) -> int:
    """The host pid of the live process whose command line holds `marker` (a shell's `$!` is
    a namespace pid when the command runs in the sandbox, so tests find children this way).
    Polled: `$!` is known as soon as bash forks, and the child may not have run its command
    yet (its command line is still bash's) on a loaded machine."""
    deadline = time.monotonic() + seconds
    while True:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and alive(int(entry.name)):
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                        return int(entry.name)
                except OSError:
                    continue
        if time.monotonic() > deadline:
            raise AssertionError(f"no process runs {marker}")
        time.sleep(0.02)


async def wait_dead(pid: int, seconds: float = 2.0) -> bool:
    """Poll until the process is gone; True if it went within `seconds`."""
    for _ in range(int(seconds / 0.01)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.01)
    return not alive(pid)


async def wait_for_file(path: Path, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_output_stderr_and_exit_code(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    ok = await run(context, {"command": "echo out; echo err >&2"})
    assert not ok.is_error
    assert ok.content == "out\nstderr:\nerr"
    failed = await run(context, {"command": "echo partial; echo boom >&2; exit 3"})
    assert failed.is_error
    assert "partial" in str(failed.content) and "boom" in str(failed.content)
    assert "Exit code 3" in str(failed.content)


async def test_working_directory_persists_per_session(tmp_path: Path) -> None:
    (tmp_path / "sub dir").mkdir()
    context = make_context(tmp_path)
    await run(context, {"command": "cd 'sub dir'"})
    here = await run(context, {"command": "pwd"})
    assert here.content == str((tmp_path / "sub dir").resolve())
    other_session = make_context(tmp_path)
    assert (await run(other_session, {"command": "pwd"})).content == str(tmp_path.resolve())
    # A failing command that changed directory still moves the shell, as in a terminal.
    await run(context, {"command": "cd / && false"})
    assert (await run(context, {"command": "pwd"})).content == "/"


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    child = tmp_path / "child.pid"
    marker = f"30.{time.time_ns() % 10**9}"
    started = time.monotonic()
    call = asyncio.ensure_future(
        run(context, {"command": f"sleep {marker} & echo $! > {child}; wait", "timeout": 500})
    )
    await wait_for_file(child)
    pid = host_pid(marker)
    result = await call
    assert time.monotonic() - started < 5
    assert result.is_error and "timed out after 500 ms" in str(result.content)
    assert await wait_dead(pid)


async def test_abort_kills_the_group_quickly(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    child = tmp_path / "child.pid"
    marker = f"30.{time.time_ns() % 10**9}"
    command = f"sleep {marker} & echo $! > {child}; wait"
    call = asyncio.ensure_future(run(context, {"command": command}))
    await wait_for_file(child)
    pid = host_pid(marker)
    aborted_at = time.monotonic()
    context.abort.abort("user interrupt")
    result = await asyncio.wait_for(call, 5)
    assert result.is_error and "user interrupt" in str(result.content)
    assert await wait_dead(pid)
    assert time.monotonic() - aborted_at < 1.0  # killed at once (0.5 s goal + load margin)


async def test_big_output_goes_to_a_file_with_a_preview(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    size = 5_000_000
    result = await run(context, {"command": f"head -c {size} /dev/zero | tr '\\0' a"}, "toolu_big")
    assert not result.is_error
    text = str(result.content)
    assert text.startswith("<persisted-output>") and "4.8MB" in text
    saved = Path(text.split("Full output saved to: ")[1].split("\n")[0])
    assert saved.stat().st_size == size
    assert saved.parent == context.session_dir() / "tool-results"
    assert len(text) < 3_000


async def test_output_just_under_the_budget_stays_inline(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    n = STDOUT_BUDGET_BYTES - 10
    result = await run(context, {"command": f"head -c {n} /dev/zero | tr '\\0' b"})
    assert result.content == "b" * n
    assert not list((context.session_dir() / "tool-results").glob("*-bash*"))


async def test_background_task_runs_and_is_registered(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    result = await run(
        context, {"command": "echo started; sleep 0.2; echo finished", "run_in_background": True}
    )
    assert not result.is_error
    task_id = str(result.content).split("task id ")[1].split(".")[0]
    task = background.get_task(context, task_id)
    assert task is not None and task.status in ("running", "completed")
    deadline = time.monotonic() + 5
    while (task := background.get_task(context, task_id)) and task.status == "running":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert task is not None and task.status == "completed" and task.exit_code == 0
    output, size = background.read_output(task)
    assert output == "started\nfinished\n" and size == len(output)


async def test_background_task_can_be_stopped(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    child = tmp_path / "bg.pid"
    marker = f"30.{time.time_ns() % 10**9}"
    command = f"sleep {marker} & echo $! > {child}; wait"
    result = await run(context, {"command": command, "run_in_background": True})
    task_id = str(result.content).split("task id ")[1].split(".")[0]
    await wait_for_file(child)
    pid = host_pid(marker)
    stopped = background.stop_task(context, task_id)
    assert stopped.status == "killed"
    assert await wait_dead(pid)
    with pytest.raises(KeyError):
        background.stop_task(context, "bash-unknown")


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("ls -la", True),
        ("cat a.txt | grep foo | wc -l", True),
        ("git status", True),
        ("git log --oneline -5", True),
        ("git diff HEAD~1", True),
        ("find . -name '*.py'", True),
        ("echo 'a|b' \"c;d\"", True),  # quoted operators are words
        ("grep '|' f", True),  # the grammar knows a quoted "|" is a word
        ("sleep 0.1", True),
        ("sort f | uniq -c", True),
        ("sed -n 1,5p f", True),
        ("awk '{print $1}' f", True),
        ("jq .name f.json", True),
        ("/bin/ls -la", True),
        ("sed -i s/a/b/ f", False),
        ("sort -o f f", False),
        ("uniq a b", False),
        ("awk '{system(\"rm x\")}' f", False),
        ("cd src && ls", False),  # moves the directory the next call starts in
        ("find . | xargs cat", False),
        ("rg -n TODO src", True),
        ("head -5 f && rm f", False),
        ("ls; rm -rf x", False),
        ("ls > out.txt", False),
        ("cat < in.txt", True),  # reading a redirected file is a read
        ("echo $(rm x)", False),
        ("echo `rm x`", False),
        ("echo $HOME", False),
        ("find . -delete", False),
        ("find . -exec rm {} ;", False),
        ("rg --pre ./script pattern", False),
        ("git push", False),
        ("git -c core.pager=sh log", False),
        ("git diff --output=x", False),
        ("FOO=1 ls", True),
        ("PATH=/tmp ls", False),
        ("rm -rf /", False),
        ("ls &", True),
        ("ls | sh", False),
        ("ls 'unclosed", False),
        ("", False),
    ],
)
def test_read_only_commands(command: str, read_only: bool) -> None:
    assert is_read_only_command(command) is read_only


def test_bash_flags() -> None:
    tool = next(t for t in builtin_tools() if t.name == "Bash")
    safe = bash.BashInput(command="git status")
    unsafe = bash.BashInput(command="rm x")
    assert tool.flag(tool.is_read_only, safe) and tool.flag(tool.is_concurrency_safe, safe)
    assert not tool.flag(tool.is_read_only, unsafe)
    assert not tool.flag(tool.is_concurrency_safe, unsafe)
    background_ls = bash.BashInput(command="ls", run_in_background=True)
    assert not tool.flag(tool.is_concurrency_safe, background_ls)
    assert tool.cancels_siblings_on_error
    assert tool.interrupt_behavior() == "cancel"
    assert tool.shell_command is not None and tool.shell_command(unsafe) == "rm x"


async def test_bad_timeout_is_rejected(tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), {"command": "true", "timeout": 600_001})
    assert result.is_error and "timeout" in str(result.content)


@pytest.mark.skipif(
    shutil.which("bwrap") is None and os.environ.get("CI") != "true",
    reason="bubblewrap (bwrap) is not installed (under CI=true this fails instead)",
)
async def test_required_sandbox_runs_under_bwrap_with_the_host_file_system(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    context = make_context(work, enabled=True)
    inside = await run(context, {"command": "echo hi > inside.txt && cat inside.txt"})
    assert inside.content == "hi"
    wrote = await run(context, {"command": f"echo out > {outside} && cat {outside}"})
    assert wrote.content == "out" and outside.read_text() == "out\n"  # the file system as it is
    probe = f"test -e /proc/{os.getpid()}/root && echo seen || echo unseen"
    sandboxed = await run(context, {"command": probe})
    assert sandboxed.content == "unseen"  # its own PID namespace: this process is not visible
    host = await run(make_context(work, enabled=False), {"command": probe})
    assert host.content == "seen"


async def test_sandbox_without_bwrap_refuses_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    context = make_context(tmp_path, enabled=True)
    result = await run(context, {"command": f"touch {tmp_path / 'ran'}"})
    assert result.is_error and "bubblewrap" in str(result.content)
    assert not (tmp_path / "ran").exists()
