"""Sleep waits, and ends early when its call is aborted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import sleep


def make_context(tmp_path: Path) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=[sleep.make_tool()]), cwd=tmp_path)


async def test_sleep_waits_the_given_time(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    started = time.monotonic()
    result = await pipeline.run(
        ToolCall(id="toolu_s", name="Sleep", input={"duration_ms": 200}), context
    )
    assert time.monotonic() - started >= 0.19
    assert result.content == "Slept for 200 ms." and not result.is_error


async def test_sleep_is_cancelled_by_abort(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    task = asyncio.ensure_future(sleep.sleep(sleep.SleepInput(duration_ms=60_000), context))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    context.abort.abort("user interrupt")
    try:
        await asyncio.wait_for(task, 2)
    except Exception as exc:
        assert "interrupted: user interrupt" in str(exc)
    else:
        raise AssertionError("Sleep did not notice the abort")
    assert time.monotonic() - started < 1.0


async def test_sleep_rejects_too_long_a_wait(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    result = await pipeline.run(
        ToolCall(id="toolu_s", name="Sleep", input={"duration_ms": 10_000_000}), context
    )
    assert result.is_error and "duration_ms" in str(result.content)


def test_sleep_flags() -> None:
    tool = sleep.make_tool()
    parsed = sleep.SleepInput(duration_ms=1)
    assert tool.flag(tool.is_concurrency_safe, parsed) and tool.interrupt_behavior() == "cancel"
