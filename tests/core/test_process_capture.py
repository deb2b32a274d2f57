"""`run_capture`: real processes, output through files, a cap, a time limit and an abort."""

from __future__ import annotations

import asyncio
import time

import pytest

from jupyter_toolhost.core.context import AbortSignal
from jupyter_toolhost.core.process import run_capture


def test_small_output_and_stderr_and_exit_code_come_back_whole() -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = asyncio.run(run_capture(["python3", "-c", script], max_bytes=1 << 20))
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert not result.truncated


def test_an_endless_writer_is_killed_at_the_cap_and_its_head_kept() -> None:
    started = time.monotonic()
    result = asyncio.run(run_capture(["yes", "line"], max_bytes=100_000, time_limit=60))
    assert result.truncated
    assert len(result.stdout) == 100_000
    assert result.stdout.startswith(b"line\nline\n")
    assert time.monotonic() - started < 30  # killed, not run to the time limit


def test_many_small_writes_arrive_complete() -> None:
    # ripgrep's shape: thousands of short writes; every byte must arrive, in order.
    script = (
        "import sys\nfor i in range(20000):\n    sys.stdout.write(f'{i}\\n'); sys.stdout.flush()"
    )
    result = asyncio.run(run_capture(["python3", "-c", script], max_bytes=1 << 20))
    assert result.stdout.decode().split() == [str(i) for i in range(20000)]
    assert not result.truncated


def test_the_time_limit_raises_and_kills_the_group() -> None:
    with pytest.raises(TimeoutError):
        asyncio.run(run_capture(["sleep", "30"], max_bytes=1000, time_limit=0.5))


def test_an_abort_kills_the_process() -> None:
    async def run() -> float:
        signal = AbortSignal()
        asyncio.get_running_loop().call_later(0.3, signal.abort)
        started = time.monotonic()
        result = await run_capture(["sleep", "30"], max_bytes=1000, abort=signal)
        assert result.exit_code is not None and result.exit_code != 0
        return time.monotonic() - started

    assert asyncio.run(run()) < 20
