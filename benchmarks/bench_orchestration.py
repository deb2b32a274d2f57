"""What orchestration costs: per-call overhead, concurrency, and how fast streamed calls start.

Run with ``python -m benchmarks.bench_orchestration``. Everything runs in one asyncio loop
with real sleeping tools; no model and no network. Streams are simulated by adding
tool_use blocks with real pauses between them, as the model client does.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.orchestration.batches import run_tools
from jupyter_toolhost.orchestration.events import CallStarted, ToolEvent
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.orchestration.streaming import StreamingToolExecutor

from .common import Measure, median, print_table, write_results

NAME = "bench_orchestration"
OVERHEAD_CALLS = 2_000
START_SAMPLES = 1_000
SLEEP_REPEATS = 5


class SleepInput(BaseModel):
    seconds: float = 0.0


class Recorder:
    """Tools that note when their body began, by tool_use id."""

    def __init__(self) -> None:
        self.began: dict[str, float] = {}

    def tools(self) -> list[Tool[Any]]:
        async def noop(_input: SleepInput, _context: ToolUseContext) -> str:
            return "ok"

        async def sleep(input: SleepInput, context: ToolUseContext) -> str:
            self.began[context.tool_use_id or ""] = time.perf_counter()
            await asyncio.sleep(input.seconds)
            return "ok"

        return [
            build_tool(
                name="Noop", input_model=SleepInput, call=noop, description="n", read_only=True
            ),
            build_tool(
                name="Sleep",
                input_model=SleepInput,
                call=sleep,
                description="s",
                concurrency_safe=True,
            ),
        ]


def sleep_calls(prefix: str, seconds: Sequence[float]) -> list[ToolCall]:
    return [ToolCall(f"{prefix}{i}", "Sleep", {"seconds": s}) for i, s in enumerate(seconds)]


async def pipeline_overhead(pipeline: Pipeline, context: ToolUseContext) -> list[Measure]:
    samples: list[float] = []
    for i in range(OVERHEAD_CALLS):
        call = ToolCall(f"noop{i}", "Noop", {})
        began = time.perf_counter()
        await pipeline.run(call, context)
        samples.append(time.perf_counter() - began)
    through_executor: list[float] = []
    for i in range(OVERHEAD_CALLS):
        call = ToolCall(f"noop-x{i}", "Noop", {})
        began = time.perf_counter()
        await run_tools([call], pipeline=pipeline, context=context)
        through_executor.append(time.perf_counter() - began)
    return [
        Measure(
            "pipeline_overhead_us",
            "pipeline overhead per no-op call",
            median(samples) * 1e6,
            "µs",
            f"median of {OVERHEAD_CALLS}, Pipeline.run",
        ),
        Measure(
            "run_tools_overhead_us",
            "run_tools overhead, 1 no-op call",
            median(through_executor) * 1e6,
            "µs",
            f"median of {OVERHEAD_CALLS}, pipeline + executor",
        ),
    ]


async def wall_of(
    calls: list[ToolCall], pipeline: Pipeline, context: ToolUseContext, cap: int
) -> float:
    executor = StreamingToolExecutor(pipeline=pipeline, context=context, max_concurrency=cap)
    began = time.perf_counter()
    for call in calls:
        executor.add_tool(call)
    await executor.results()
    return time.perf_counter() - began


async def concurrency(pipeline: Pipeline, context: ToolUseContext) -> list[Measure]:
    ten = [
        await wall_of(sleep_calls(f"t{r}-", [0.1] * 10), pipeline, context, 10)
        for r in range(SLEEP_REPEATS)
    ]
    fifteen = [
        await wall_of(sleep_calls(f"f{r}-", [0.1] * 15), pipeline, context, 10)
        for r in range(SLEEP_REPEATS)
    ]
    return [
        Measure(
            "ten_safe_sleeps_s",
            "10 safe sleep(0.1) calls, wall",
            median(ten),
            "s",
            f"median of {SLEEP_REPEATS}; ideal 0.1, sequential 1.0",
        ),
        Measure(
            "fifteen_capped_sleeps_s",
            "15 safe sleep(0.1) calls, cap 10, wall",
            median(fifteen),
            "s",
            f"median of {SLEEP_REPEATS}; two waves: ideal 0.2",
        ),
    ]


async def streamed_wall(
    seconds: Sequence[float], gap: float, pipeline: Pipeline, context: ToolUseContext, tag: str
) -> float:
    executor = StreamingToolExecutor(pipeline=pipeline, context=context)
    began = time.perf_counter()
    for i, call in enumerate(sleep_calls(tag, seconds)):
        if i:
            await asyncio.sleep(gap)  # the next block is still streaming
        executor.add_tool(call)
    await executor.results()
    return time.perf_counter() - began


async def streaming(
    recorder: Recorder, pipeline: Pipeline, context: ToolUseContext
) -> list[Measure]:
    to_event: list[float] = []
    to_body: list[float] = []
    for i in range(START_SAMPLES):
        started: list[float] = []

        def on_event(event: ToolEvent, started: list[float] = started) -> None:
            if isinstance(event, CallStarted):
                started.append(event.started_at)

        executor = StreamingToolExecutor(pipeline=pipeline, context=context, on_event=on_event)
        call = ToolCall(f"s{i}", "Sleep", {"seconds": 0})
        added = time.perf_counter()
        executor.add_tool(call)
        await executor.results()
        to_event.append(started[0] - added)
        to_body.append(recorder.began[call.id] - added)
    ten = await streamed_wall([0.1] * 10, 0.05, pipeline, context, "st-")
    long_first = await streamed_wall([1.0] + [0.1] * 9, 0.05, pipeline, context, "lf-")
    return [
        Measure(
            "add_to_started_us",
            "tool_use added -> CallStarted",
            median(to_event) * 1e6,
            "µs",
            f"median of {START_SAMPLES}",
        ),
        Measure(
            "add_to_tool_body_us",
            "tool_use added -> tool body runs",
            median(to_body) * 1e6,
            "µs",
            f"median of {START_SAMPLES}; includes the pipeline's checks",
        ),
        Measure(
            "streamed_ten_sleeps_s",
            "10 x sleep(0.1), blocks 0.05 s apart",
            ten,
            "s",
            "physical limit ~0.55",
        ),
        Measure(
            "streamed_long_first_s",
            "sleep(1.0) + 9 x sleep(0.1), 0.05 s apart",
            long_first,
            "s",
            "physical limit ~1.0",
        ),
    ]


async def main() -> list[Measure]:
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as tmp:
        context = ToolUseContext(options=ToolUseOptions(tools=recorder.tools()), cwd=Path(tmp))
        pipeline = Pipeline(results=ResultStore(context.session_dir() / "tool-results"))
        measures = await pipeline_overhead(pipeline, context)
        measures += await concurrency(pipeline, context)
        measures += await streaming(recorder, pipeline, context)
    return measures


if __name__ == "__main__":
    results = asyncio.run(main())
    print_table("orchestration", results)
    print(f"\nwritten to {write_results(NAME, results)}")
