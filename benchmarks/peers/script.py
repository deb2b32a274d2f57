"""The scripted conversation every framework runs, and what a run reports.

A scenario is `turns` model responses that each carry the same tool calls (a `sleep` tool
with the given seconds; 0 means a no-op), streamed `block_delay` seconds apart, followed by
one text answer. The same script drives the loopback Messages API server and pydantic-ai's
function model, so every framework sees the same blocks at the same moments.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from jupyter_toolhost.testing import Turn, text, tool_use

TOOL_NAME = "sleep"
TOOL_DESCRIPTION = "Wait for the given number of seconds (0 returns at once)."
FINAL_TEXT = "done"
MODEL_ID = "claude-sonnet-4-5"
PROMPT = "Run the tool calls."


@dataclass(frozen=True, slots=True)
class Scenario:
    """One conversation: `turns` responses of calls to `sleep(s)` for each s in `sleeps`."""

    key: str
    label: str
    sleeps: tuple[float, ...]
    turns: int = 1
    block_delay: float = 0.0
    physical_limit: float = 0.0
    """The fastest any loop could finish: tools start as their blocks complete, in parallel."""
    safe: bool = True
    """Whether the `sleep` tool declares itself concurrency-safe (the peers run it either way)."""
    max_repeats: int | None = None
    """Fewer repeats than the benchmark's for this scenario (the long conversations)."""

    @property
    def calls(self) -> int:
        return self.turns * len(self.sleeps)

    def server_turns(self) -> list[Turn]:
        """The loopback server's script: `turns` tool-call responses, then the answer."""
        blocks = [tool_use(TOOL_NAME, {"seconds": s}) for s in self.sleeps]
        calls = [Turn(list(blocks), block_delay=self.block_delay) for _ in range(self.turns)]
        return [*calls, Turn([text(FINAL_TEXT)])]


def streamed_limit(sleeps: tuple[float, ...], block_delay: float) -> float:
    """When the last call ends if each starts as its block completes: max(i * delay + s_i)."""
    return max(i * block_delay + s for i, s in enumerate(sleeps))


@dataclass
class Clock:
    """Counts the tool's calls and notes when each ended (`time.perf_counter()` values)."""

    ends: list[float] = field(default_factory=list)

    async def sleep(self, seconds: float) -> str:
        """The tool body every framework calls."""
        if seconds > 0:
            await asyncio.sleep(seconds)
        self.ends.append(time.perf_counter())
        return "ok"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run measured."""

    wall_s: float
    """From the prompt to the final answer."""
    results_s: float
    """From the prompt to the end of the last tool call."""
    cpu_s: float
    """CPU time of the whole process over the run (the loopback server's thread included)."""
    calls: int
    answer: str


Runner = Callable[[Scenario], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class Start:
    """When a run began, by the wall clock and by the process's CPU clock."""

    wall: float
    cpu: float

    @classmethod
    def now(cls) -> Start:
        return cls(time.perf_counter(), time.process_time())


def outcome(began: Start, clock: Clock, answer: str, scenario: Scenario) -> Outcome:
    """Close a run: check that every call ran and the answer arrived, then report."""
    wall = time.perf_counter() - began.wall
    cpu = time.process_time() - began.cpu
    if len(clock.ends) != scenario.calls or answer != FINAL_TEXT:
        raise RuntimeError(
            f"{scenario.key}: ran {len(clock.ends)} of {scenario.calls} calls, answer {answer!r}"
        )
    return Outcome(wall, max(clock.ends) - began.wall, cpu, len(clock.ends), answer)
