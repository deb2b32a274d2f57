"""How the loop's per-call overhead grows with the length of the conversation.

Run with ``python -m benchmarks.profile_turns [--turns 50 100 200 300 400] [--repeats N]``.
Each length is a scripted session of N turns x 1 no-op call (`peers.script`), run through
this project's `Session` (`peers.ours`), the hand-written loop on the raw client
(`peers.bare`, the floor) and, unless ``--no-runner``, the `anthropic` SDK's tool runner,
interleaved, against the loopback Messages API server. It prints the fastest wall time of
each, the overhead per call (wall / calls: the calls sleep 0 s), ours over the raw loop,
and how ours grows against its shortest length.

``--profile N`` runs ours once at N turns under cProfile instead and prints the functions
that took the most time (own and cumulative), so the hot path can be read.

Not a ``bench_*`` module: ``python -m benchmarks`` does not run it, and it writes no
results file; it is a tool for reading the per-turn cost.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
from collections.abc import Sequence

from .peers.anthropic_runner import run_tool_runner
from .peers.bare import run_bare
from .peers.ours import run_ours
from .peers.script import Runner, Scenario

TURNS = (50, 100, 200, 300, 400)


def scenario(turns: int) -> Scenario:
    return Scenario(f"turns_{turns}", f"{turns} turns x 1 no-op call", (0.0,), turns)


Fastest = dict[tuple[int, str], float]


async def measure(
    lengths: Sequence[int], runners: dict[str, Runner], repeats: int
) -> tuple[Fastest, Fastest]:
    """The fastest wall time and the least CPU time of each runner at each length (after
    one warm-up each)."""
    warm = Scenario("warm_up", "warm-up", (0.0, 0.0), 2)
    for run in runners.values():
        await run(warm)
    wall: Fastest = {}
    cpu: Fastest = {}
    for turns in lengths:
        for _ in range(repeats):
            for key, run in runners.items():
                outcome = await run(scenario(turns))
                wall[turns, key] = min(outcome.wall_s, wall.get((turns, key), outcome.wall_s))
                cpu[turns, key] = min(outcome.cpu_s, cpu.get((turns, key), outcome.cpu_s))
    return wall, cpu


def report(title: str, lengths: Sequence[int], keys: Sequence[str], fastest: Fastest) -> None:
    """One table: per length, each runner's seconds and ms per call, and the ratios."""
    print(f"\n{title}")
    header = ["turns", *(f"{k} s" for k in keys), *(f"{k} ms/call" for k in keys)]
    header += ["ours/bare", "ours/runner"] if "runner" in keys else ["ours/bare"]
    header += ["ours-bare ms/call", f"ours ms/call / at {lengths[0]}"]
    rows = [header]
    first = fastest[lengths[0], "ours"] / lengths[0]
    for turns in lengths:
        seconds = [fastest[turns, k] for k in keys]
        per_call = [s / turns * 1e3 for s in seconds]
        row = [str(turns), *(f"{s:.3f}" for s in seconds), *(f"{p:.2f}" for p in per_call)]
        row.append(f"{fastest[turns, 'ours'] / fastest[turns, 'bare']:.2f}")
        if "runner" in keys:
            row.append(f"{fastest[turns, 'ours'] / fastest[turns, 'runner']:.2f}")
        row.append(f"{(fastest[turns, 'ours'] - fastest[turns, 'bare']) / turns * 1e3:.2f}")
        row.append(f"{fastest[turns, 'ours'] / turns / first:.2f}")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))


def profile(turns: int, top: int) -> None:
    """Run ours once at `turns` under cProfile and print the costliest functions."""
    asyncio.run(run_ours(scenario(2)))  # imports and first-use costs stay out
    profiler = cProfile.Profile()
    profiler.enable()
    outcome = asyncio.run(run_ours(scenario(turns)))
    profiler.disable()
    print(f"ours, {turns} turns: {outcome.wall_s:.3f} s under the profiler")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=list(TURNS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-runner", action="store_true", help="leave the SDK runner out")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile ours at N turns")
    parser.add_argument("--top", type=int, default=40, help="rows of the profile to print")
    args = parser.parse_args()
    if args.profile:
        profile(args.profile, args.top)
        return
    runners: dict[str, Runner] = {"ours": run_ours, "bare": run_bare}
    if not args.no_runner:
        runners["runner"] = run_tool_runner
    lengths = sorted(args.turns)
    wall, cpu = asyncio.run(measure(lengths, runners, args.repeats))
    print(f"N turns x 1 no-op call, {args.repeats} runs each; overhead per call = time / N")
    report("wall time (fastest run)", lengths, list(runners), wall)
    report("CPU time of the process, server thread included (least)", lengths, list(runners), cpu)


if __name__ == "__main__":
    main()
