"""Every target the benchmarks are held to, with the reason for it, checked against one run.

`report.py` lists the targets a run missed or did not measure, each with its figure and its
reason (`WHY`). How the targets are read where a phrase could mean two things:

- "the physical limit" of a streamed scenario is the time its calls need when each starts
  the moment its block arrives; "within 5%" and "within 2%" are two targets on the same row;
- "the thinnest peer" is the fastest of the anthropic tool runner (both modes) and pydantic-ai
  (both models), never the raw-client loop (it is the floor, no agent framework);
- "the anthropic tool runner" is both its modes (sequential and eager);
- "streamed scenarios" are every scenario with a physical limit (the peers' two, the safe
  head-start one and Claude Code's two Bash ones, this project's figure in each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report_parts import Run

PEERS = "bench_peers"
THIN_PEERS = ("sdk_runner", "sdk_eager", "pydantic_ai", "pai_function")
NAMES = {
    "sdk_runner": "anthropic tool runner",
    "sdk_eager": "tool runner, eager",
    "pydantic_ai": "pydantic-ai",
    "pai_function": "pydantic-ai FunctionModel",
    "bare": "raw-client loop",
}


WHY = {
    "streamed": (
        "safe calls start while the message still streams, so a batch should take the time "
        "of its calls; 5% leaves room for the loopback request and the final round trip"
    ),
    "streamed_tight": (
        "a call starts at its own block's end once its input parses as whole JSON, so "
        "nothing but the final round trip is left above the physical limit"
    ),
    "thinnest_peer": (
        "permissions, hooks, budgets and caching are work a user should not feel: a "
        "session must be as fast as the lightest agent loop on the same client"
    ),
    "runner": (
        "the anthropic SDK's own tool runner is what a user would write instead: this must "
        "not be slower at any conversation length"
    ),
    "flat_turns": (
        "a notebook keeps one conversation across many cells: a turn must not cost more as "
        "the history grows"
    ),
    "raw_loop": (
        "a long notebook session must not pay for the cache and billing work on every turn: "
        "at most 10% over a hand-written loop on the raw client"
    ),
    "claude_code": (
        "the same Bash scenario through Claude Code: the tool system rebuilt here must keep "
        "its pace"
    ),
    "disclosure": (
        "deferred tools keep their schemas out of every request; Anthropic reports about "
        "85% fewer tokens with its tool search "
        "(https://www.anthropic.com/engineering/advanced-tool-use), and this should do better"
    ),
    "tool_search": (
        "a deferred tool the search does not find cannot be used: the model should find it "
        "with one search nearly always (plain BM25, the benchmark's last row, is far below)"
    ),
    "semantic_light": (
        "the ranker that reads meaning is the default only if it is light: no PyTorch "
        "(about 1.4 GB), and a first search that does not make the user wait"
    ),
    "grep": "Grep runs the rg binary when it can; the tool around it should add little",
    "cost": (
        "the same script through Claude Code: a notebook conversation must cost no more, and "
        "less when it runs long or pauses between cells, where the 1-hour cache pays"
    ),
    "rss": (
        "the kernel holds the user's data; a tool's output goes to disk and the model gets a "
        "preview, so a tool that prints 200 MB must not grow the kernel"
    ),
    "load_ext": "`%load_ext` is the first cell of every session: it should feel instant",
    "permissions": (
        "every tool call is checked against every rule: a large settings file must not "
        "slow a call down"
    ),
    "corpus": "each bypass is a way for the model to run what the user did not allow",
}
"""The reason for each target, by the name the checks below give it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target against one run: met (True), missed (False) or not measured (None)."""

    target: str
    figure: str
    met: bool | None
    why: str
    """The reason for the target (a value of `WHY`)."""


def _unmeasured(target: str, reason: str, figure: str = "not measured in this run") -> Verdict:
    return Verdict(target, figure, None, WHY[reason])


def _verdict(target: str, figure: str, met: bool, reason: str) -> Verdict:
    return Verdict(target, figure, met, WHY[reason])


def _scenario(run: Run, key: str) -> dict[str, float] | None:
    return run.payload(PEERS).get("scenarios", {}).get(key)


def _wall(run: Run, scenario: str, contender: str) -> float | None:
    return run.value(PEERS, f"{scenario}.{contender}.wall_s")


def streamed(run: Run) -> list[Verdict]:
    found = []
    for key, label in (("ten_sleeps", "10 × sleep(0.1)"), ("long_first", "sleep(1.0) + 9 × 0.1")):
        info, wall = _scenario(run, key), _wall(run, key, "ours")
        for factor, reason in ((1.05, "streamed"), (1.02, "streamed_tight")):
            target = f"{label} streamed: ≤ {factor} × the physical limit"
            if info is None or wall is None:
                found.append(_unmeasured(target, reason))
                continue
            limit = info["physical_limit_s"]
            figure = f"{wall:.3f} s = {wall / limit:.3f} × {limit:.2f} s"
            found.append(_verdict(target, figure, wall <= factor * limit, reason))
    target = "head start, safe calls: time to all results ≤ 1.02 × the physical limit"
    info, results = (
        _scenario(run, "head_start_safe"),
        run.value(PEERS, "head_start_safe.streaming_s"),
    )
    if info is None or results is None:
        found.append(_unmeasured(target, "streamed_tight"))
    else:
        limit = info["physical_limit_s"]
        figure = f"{results:.3f} s = {results / limit:.3f} × {limit:.2f} s"
        found.append(_verdict(target, figure, results <= 1.02 * limit, "streamed_tight"))
    cc = run.payload("claude_code")
    for key, info in cc.get("scenarios", {}).items():
        ours = run.value("claude_code", f"{key}.ours.median_s")
        limit = info.get("physical_limit_s") or 0.0
        if limit <= 0:
            continue
        target = f"Bash {info.get('label', key)}: ≤ 1.02 × the physical limit"
        if ours is None:
            found.append(_unmeasured(target, "streamed_tight"))
            continue
        figure = f"{ours:.3f} s = {ours / limit:.3f} × {limit:.2f} s"
        found.append(_verdict(target, figure, ours <= 1.02 * limit, "streamed_tight"))
    return found


def turns(run: Run) -> list[Verdict]:
    found = []
    target = "50 turns: no slower than the thinnest peer"
    ours = _wall(run, "turns_50", "ours")
    walls = {k: w for k in THIN_PEERS if (w := _wall(run, "turns_50", k)) is not None}
    if ours is None or not walls:
        found.append(_unmeasured(target, "thinnest_peer"))
    else:
        thinnest = min(walls, key=walls.__getitem__)
        figure = f"{ours:.3f} s vs {NAMES[thinnest]} {walls[thinnest]:.3f} s"
        found.append(_verdict(target, figure, ours <= walls[thinnest], "thinnest_peer"))
    lengths = [
        int(k.removeprefix("turns_"))
        for k in run.payload(PEERS).get("scenarios", {})
        if k.startswith("turns_")
    ]
    for n in sorted(lengths) or [50]:
        target = f"{n} turns: no slower than the anthropic tool runner (both modes)"
        ours = _wall(run, f"turns_{n}", "ours")
        runner = {k: _wall(run, f"turns_{n}", k) for k in ("sdk_runner", "sdk_eager")}
        if ours is None or None in runner.values():
            found.append(_unmeasured(target, "runner"))
            continue
        shown = ", ".join(f"{NAMES[k]} {w:.3f} s" for k, w in runner.items())
        met = all(ours <= w for w in runner.values() if w is not None)
        found.append(_verdict(target, f"{ours:.3f} s vs {shown}", met, "runner"))
    target = "overhead per call at 400 turns ≤ 1.2 × that at 50"
    at_400 = run.value(PEERS, "turns_400.ours.overhead_ms")
    at_50 = run.value(PEERS, "turns_50.ours.overhead_ms")
    if at_400 is None or at_50 is None:
        found.append(_unmeasured(target, "flat_turns"))
    else:
        figure = f"{at_400:.1f} ms vs {at_50:.1f} ms (×{at_400 / at_50:.2f})"
        found.append(_verdict(target, figure, at_400 <= 1.2 * at_50, "flat_turns"))
    target = "300 turns ≤ 1.1 × the raw-client loop over the same turns"
    ours, bare = _wall(run, "turns_300", "ours"), _wall(run, "turns_300", "bare")
    if ours is None or bare is None:
        found.append(_unmeasured(target, "raw_loop"))
    else:
        figure = f"{ours:.3f} s vs {bare:.3f} s (×{ours / bare:.2f})"
        found.append(_verdict(target, figure, ours <= 1.1 * bare, "raw_loop"))
    return found


def claude_code(run: Run) -> list[Verdict]:
    found = []
    for key, info in run.payload("claude_code").get("scenarios", {}).items():
        target = f"Bash {info.get('label', key)}: ≤ 1.05 × Claude Code"
        ratio = run.value("claude_code", f"{key}.ratio_median")
        if ratio is None:
            found.append(_unmeasured(target, "claude_code", "no Claude Code figure"))
            continue
        found.append(_verdict(target, f"×{ratio:.2f} (medians)", ratio <= 1.05, "claude_code"))
    if not found:
        found.append(_unmeasured("Bash scenarios: ≤ 1.05 × Claude Code", "claude_code"))
    return found


def _at_least(
    run: Run, benchmark: str, key: str, target: str, floor: float, unit: str, reason: str
) -> Verdict:
    value = run.value(benchmark, key)
    if value is None:
        return _unmeasured(target, reason)
    return _verdict(target, f"{_number(value)}{unit}", value >= floor, reason)


def _at_most(
    run: Run, benchmark: str, key: str, target: str, ceiling: float, unit: str, reason: str
) -> Verdict:
    value = run.value(benchmark, key)
    if value is None:
        return _unmeasured(target, reason)
    return _verdict(target, f"{_number(value)}{unit}", value <= ceiling, reason)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


def others(run: Run) -> list[Verdict]:
    found = [
        _at_least(
            run,
            "bench_disclosure",
            "catalog_reduction_tools",
            "`tools` bytes, deferred vs all loaded: ≥ 90% fewer",
            90.0,
            "% fewer",
            "disclosure",
        ),
    ]
    rankers = [("ours", "ToolSearch")]
    if run.value("bench_tool_search", "heldout_semantic_first") is not None:
        rankers.append(("semantic", "ToolSearch + semantic"))
    for key, name in rankers:
        target = f"{name}, held-out queries: ≥ 80% first, ≥ 95% top 5"
        first = run.value("bench_tool_search", f"heldout_{key}_first")
        top5 = run.value("bench_tool_search", f"heldout_{key}_top5")
        if first is None or top5 is None:
            found.append(_unmeasured(target, "tool_search"))
            continue
        figure = f"{first:.1f}% first, {top5:.1f}% top 5"
        found.append(_verdict(target, figure, first >= 80 and top5 >= 95, "tool_search"))
    found += [
        _at_most(
            run,
            "bench_tool_search",
            "semantic_first_search_seconds",
            "ToolSearch's default semantic ranker: first search over 200 tools ≤ 1 s",
            1.0,
            " s",
            "semantic_light",
        ),
        _at_most(
            run,
            "bench_tool_search",
            "semantic_installed_mb",
            "ToolSearch's default semantic ranker: its extra installs ≤ 150 MB",
            150.0,
            " MB",
            "semantic_light",
        ),
        _at_most(run, "bench_tools", "grep_ratio_worst", "Grep: ≤ 1.2 × rg", 1.2, " × rg", "grep"),
        *(
            _at_most(
                run,
                "session_cost",
                f"{key}.ratio",
                f"{what}: billed-equivalent input ≤ {limit} × Claude Code's",
                limit,
                " × Claude Code's",
                "cost",
            )
            for key, what, limit in (
                ("turns_30", "a 30-turn session", 1.0),
                ("turns_100", "a 100-turn session", 0.6),
                ("cells_10", "10 cells 10 minutes apart", 0.5),
            )
        ),
        _at_most(
            run,
            "bench_tools",
            "bash_200mb_peak_rss_growth_mb",
            "Bash printing 200 MB: peak RSS growth ≤ 30 MB",
            30.0,
            " MB",
            "rss",
        ),
    ]
    for key, what in (
        ("shell.cold_ms", "fresh interpreter, cold"),
        ("shell.warm_ms", "fresh interpreter, warm"),
        ("kernel.cold_ms", "fresh kernel, cold"),
        ("kernel.warm_ms", "fresh kernel, warm"),
    ):
        target = f"`%load_ext jupyter_toolhost`, {what}: ≤ 150 ms"
        found.append(_at_most(run, "bench_load_ext", key, target, 150.0, " ms", "load_ext"))
    found.append(
        _at_least(
            run,
            "bench_permissions",
            "decisions_pure",
            "permission decisions, 1,000 rules: ≥ 50,000/s",
            50_000.0,
            "/s",
            "permissions",
        ),
    )
    corpus = run.payload("permission_corpus")
    target = "permission attack corpus: 0 bypasses"
    if not corpus:
        found.append(_unmeasured(target, "corpus"))
    else:
        bypasses = int(corpus.get("bypasses", -1))
        figure = f"{bypasses} bypasses in {corpus.get('attack_runs')} runs"
        found.append(_verdict(target, figure, bypasses == 0, "corpus"))
    return found


CHECKS: tuple[Callable[[Run], list[Verdict]], ...] = (streamed, turns, claude_code, others)


def evaluate(run: Run) -> list[Verdict]:
    """Every target's verdict on `run`, in a fixed order."""
    return [verdict for check in CHECKS for verdict in check(run)]
