"""This project's loop against its peers, on the same scripted conversation.

Run with ``python -m benchmarks.bench_peers [--repeats N]``. Every contender gets the same
conversation from the loopback Messages API server (`jupyter_toolhost.testing`) through the
real `anthropic` client: this project's `Session`; the SDK's own tool runner, sequential and
with `run_tools_eagerly`; pydantic-ai with its Anthropic model; and a bare hand-written loop
on the raw client (the floor: what the client and server alone cost here). pydantic-ai also
runs with a scripted `FunctionModel`, which skips HTTP altogether (each response is ready
when its last block would be), so it is the thinnest peer but not a like-for-like one.

The N-turn conversations run at 50, 100, 200, 300 and 400 turns (one no-op call per turn,
the whole history sent every turn, as every contender does), so the table shows how each
loop's cost per turn grows with the history; the 200-, 300- and 400-turn ones run
`LONG_REPEATS` times instead of `--repeats` (they take most of the time).

Runs are interleaved contender by contender. Each wall time shown is the fastest of the
repeats (on a shared machine the fastest run is the least disturbed one; the JSON also has
the medians and every sample). A ratio is the contender's wall time over this project's
(above 1: slower than ours).
Per-call overhead is (wall - physical limit) / calls; CPU is the whole process's, server
thread included. The streaming head start compares this project's executor with itself:
tool_use blocks handed over as they complete, versus once the whole message has arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .common import REQUIRE_PEERS, Measure, median, print_table, write_results
from .peers.anthropic_runner import run_tool_runner, run_tool_runner_eager
from .peers.bare import run_bare
from .peers.ours import run_ours, run_ours_whole_message
from .peers.script import Outcome, Runner, Scenario, streamed_limit

NAME = "bench_peers"
REPEATS = 5
LONG_REPEATS = 3
"""Repeats of the 200-, 300- and 400-turn conversations (they take most of the time)."""

TEN = (0.1,) * 10
LONG_FIRST = (1.0,) + (0.1,) * 9
SCENARIOS = (
    Scenario(
        "ten_sleeps", "10 x sleep(0.1), 0.05 s apart", TEN, 1, 0.05, streamed_limit(TEN, 0.05)
    ),
    Scenario(
        "long_first",
        "sleep(1.0) + 9 x sleep(0.1), 0.05 s apart",
        LONG_FIRST,
        1,
        0.05,
        streamed_limit(LONG_FIRST, 0.05),
    ),
    Scenario("turns_50", "50 turns x 1 no-op call", (0.0,), 50),
    Scenario("turns_100", "100 turns x 1 no-op call", (0.0,), 100),
    Scenario("turns_200", "200 turns x 1 no-op call", (0.0,), 200, max_repeats=LONG_REPEATS),
    Scenario("turns_300", "300 turns x 1 no-op call", (0.0,), 300, max_repeats=LONG_REPEATS),
    Scenario("turns_400", "400 turns x 1 no-op call", (0.0,), 400, max_repeats=LONG_REPEATS),
)
HEAD_SAFE = (1.0, 0.3, 0.3, 0.3, 0.3)
HEAD_UNSAFE = (0.3,) * 5
HEAD_START = (
    Scenario(
        "head_start_safe",
        "safe: sleep(1.0) + 4 x sleep(0.3), 0.3 s apart",
        HEAD_SAFE,
        1,
        0.3,
        streamed_limit(HEAD_SAFE, 0.3),
    ),
    Scenario(
        "head_start_unsafe",
        "unsafe (serial): 5 x sleep(0.3), 0.3 s apart",
        HEAD_UNSAFE,
        1,
        0.3,
        sum(HEAD_UNSAFE),
        safe=False,
    ),
)

Samples = dict[tuple[str, str], list[Outcome]]


@dataclass(frozen=True, slots=True)
class Contender:
    key: str
    label: str
    run: Runner


def contenders() -> list[Contender]:
    """This project first, then the peers that are installed, then the bare floor."""
    found = [
        Contender("ours", "jupyter_toolhost Session", run_ours),
        Contender("sdk_runner", "anthropic tool_runner (stream, sequential)", run_tool_runner),
        Contender("sdk_eager", "anthropic tool_runner, run_tools_eagerly", run_tool_runner_eager),
    ]
    try:
        from .peers.pydantic_ai_runner import run_anthropic_model, run_function_model
    except ImportError as exc:
        if os.environ.get(REQUIRE_PEERS) == "1":
            raise SystemExit(
                f"pydantic-ai, the main peer, cannot be imported ({exc}): install the bench "
                'extra (pip install -e ".[bench]"; ./dev bench does it itself)'
            ) from exc
        print(
            f"WARNING: pydantic-ai is not installed, so it is left out of this run: {exc}\n"
            '(pip install -e ".[bench]", or run ./dev bench, to compare against it)',
            file=sys.stderr,
            flush=True,
        )
    else:
        found.append(Contender("pydantic_ai", "pydantic-ai, Anthropic model", run_anthropic_model))
        found.append(
            Contender("pai_function", "pydantic-ai, FunctionModel (no HTTP)", run_function_model)
        )
    found.append(Contender("bare", "hand-written loop on the raw client (floor)", run_bare))
    return found


async def measure(
    scenarios: Sequence[Scenario], entrants: Sequence[Contender], repeats: int
) -> Samples:
    """Run every scenario `repeats` times per contender, interleaved, after one warm-up."""
    warm_up = Scenario("warm_up", "warm-up", (0.0, 0.0), 2)
    for entrant in entrants:
        await entrant.run(warm_up)
    samples: Samples = {}
    for scenario in scenarios:
        for _ in range(min(repeats, scenario.max_repeats or repeats)):
            for entrant in entrants:
                outcome = await entrant.run(scenario)
                samples.setdefault((scenario.key, entrant.key), []).append(outcome)
    return samples


@dataclass(frozen=True, slots=True)
class Figures:
    """What one contender did on one scenario."""

    wall_s: float
    wall_median_s: float
    cpu_s: float
    overhead_ms: float
    ratio: float


def figures(samples: Samples, scenario: Scenario, key: str) -> Figures:
    """Fastest wall time (and its median), median CPU, overhead and ratio to ours."""
    ours = min(o.wall_s for o in samples[scenario.key, "ours"])
    walls = [o.wall_s for o in samples[scenario.key, key]]
    wall = min(walls)
    cpu = median([o.cpu_s for o in samples[scenario.key, key]])
    overhead_ms = (wall - scenario.physical_limit) / scenario.calls * 1e3
    return Figures(wall, median(walls), cpu, overhead_ms, wall / ours)


def peer_measures(samples: Samples, entrants: Sequence[Contender]) -> list[Measure]:
    measures: list[Measure] = []
    for scenario in SCENARIOS:
        for entrant in entrants:
            f = figures(samples, scenario, entrant.key)
            prefix = f"{scenario.key}.{entrant.key}"
            label = f"{scenario.label} [{entrant.key}]"
            measures += [
                Measure(f"{prefix}.wall_s", label, f.wall_s, "s", f"fastest; {entrant.label}"),
                Measure(f"{prefix}.wall_median_s", label, f.wall_median_s, "s", "median"),
                Measure(f"{prefix}.ratio", label, f.ratio, "x ours"),
                Measure(f"{prefix}.overhead_ms", label, f.overhead_ms, "ms/call over limit"),
                Measure(f"{prefix}.cpu_ms_per_call", label, f.cpu_s / scenario.calls * 1e3, "ms"),
            ]
    return measures


def head_start_measures(samples: Samples) -> list[Measure]:
    measures: list[Measure] = []
    for scenario in HEAD_START:
        streamed = min(o.results_s for o in samples[scenario.key, "ours"])
        whole = min(o.results_s for o in samples[scenario.key, "ours_whole"])
        limit = f"physical limit {scenario.physical_limit:.2f} s"
        measures += [
            Measure(
                f"{scenario.key}.streaming_s",
                f"{scenario.label}: streaming executor",
                streamed,
                "s",
                f"time to all results; {limit}",
            ),
            Measure(
                f"{scenario.key}.whole_message_s",
                "  the same executor after the whole message",
                whole,
                "s",
                "time to all results",
            ),
            Measure(f"{scenario.key}.head_start_s", "  head start", whole - streamed, "s"),
        ]
    return measures


def print_matrix(samples: Samples, entrants: Sequence[Contender]) -> None:
    """Scenarios down, contenders across: wall (ratio to ours), overhead and CPU per call."""
    rows = [["scenario", "limit", *[e.key for e in entrants]]]
    for scenario in SCENARIOS:
        cells = [figures(samples, scenario, e.key) for e in entrants]
        rows.append(
            [scenario.label, f"{scenario.physical_limit:.2f} s"]
            + [
                f"{f.wall_s:.3f} s" + ("" if i == 0 else f" x{f.ratio:.2f}")
                for i, f in enumerate(cells)
            ]
        )
        rows.append(["  overhead per call", ""] + [f"{f.overhead_ms:.1f} ms" for f in cells])
        rows.append(
            ["  CPU per call", ""] + [f"{f.cpu_s / scenario.calls * 1e3:.1f} ms" for f in cells]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("\nloop overhead against the peers (fastest of the repeats; xN = wall time / ours)")
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for entrant in entrants:
        print(f"  {entrant.key}: {entrant.label}")


def versions() -> dict[str, str]:
    found = {}
    for package in ("anthropic", "pydantic-ai-slim", "pydantic", "jupyter-toolhost"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


async def main(repeats: int) -> tuple[list[Measure], dict[str, object]]:
    entrants = contenders()
    samples = await measure(SCENARIOS, entrants, repeats)
    whole = Contender("ours_whole", "ours, blocks after the whole message", run_ours_whole_message)
    samples |= await measure(HEAD_START, [entrants[0], whole], repeats)
    print_matrix(samples, entrants)
    extra: dict[str, object] = {
        "versions": versions(),
        "repeats": repeats,
        "scenarios": {
            s.key: {
                "label": s.label,
                "physical_limit_s": s.physical_limit,
                "calls": s.calls,
                "turns": s.turns,
                "repeats": min(repeats, s.max_repeats or repeats),
            }
            for s in (*SCENARIOS, *HEAD_START)
        },
        "contenders": {e.key: e.label for e in entrants},
        "samples_wall_s": {
            f"{scenario}.{key}": [round(o.wall_s, 4) for o in runs]
            for (scenario, key), runs in samples.items()
        },
    }
    return peer_measures(samples, entrants) + head_start_measures(samples), extra


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    results, extra = asyncio.run(main(args.repeats))
    print_table("streaming head start", [m for m in results if m.key.startswith("head_start")])
    path = write_results(NAME, results, extra)
    print(f"\nversions: {extra['versions']}\nwritten to {path}")
