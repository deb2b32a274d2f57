"""Every target the benchmarks are held to, checked against one run (for `report.py`).

The sources: DESIGN.md's "Targets" table ("DESIGN"); issue #21's additions ("#21": per-call
overhead at 400 turns at most 1.2 × that at 50, every conversation length no slower than the
anthropic tool runner, every streamed scenario within 2% of its physical limit); DESIGN's
300 turns at most 1.1 × the raw-client loop (a long notebook session must not pay for the
cache and billing work on every turn); `bench_claude_code`'s ratio to Claude Code; and the
permission corpus's zero bypasses. Readings that DESIGN leaves open are fixed here: "≈ 1.0 s"
for the long-first scenario is read as the ten-sleeps row's "within 5% of the physical
limit"; "the thinnest peer" is the fastest of the anthropic tool runner (both modes) and
pydantic-ai (both models), never the raw-client floor; "the anthropic tool runner" is both
its modes; "streamed scenarios" are every scenario with a physical limit (the peers' two,
the safe head-start one and Claude Code's two Bash ones, this project's figure in each).
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


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target against one run: met (True), missed (False) or not measured (None)."""

    target: str
    figure: str
    met: bool | None
    source: str


def _unmeasured(target: str, source: str, why: str = "not measured in this run") -> Verdict:
    return Verdict(target, why, None, source)


def _scenario(run: Run, key: str) -> dict[str, float] | None:
    return run.payload(PEERS).get("scenarios", {}).get(key)


def _wall(run: Run, scenario: str, contender: str) -> float | None:
    return run.value(PEERS, f"{scenario}.{contender}.wall_s")


def streamed(run: Run) -> list[Verdict]:
    found = []
    for key, label in (("ten_sleeps", "10 × sleep(0.1)"), ("long_first", "sleep(1.0) + 9 × 0.1")):
        info, wall = _scenario(run, key), _wall(run, key, "ours")
        for factor, source in ((1.05, "DESIGN"), (1.02, "#21")):
            target = f"{label} streamed: ≤ {factor} × the physical limit"
            if info is None or wall is None:
                found.append(_unmeasured(target, source))
                continue
            limit = info["physical_limit_s"]
            figure = f"{wall:.3f} s = {wall / limit:.3f} × {limit:.2f} s"
            found.append(Verdict(target, figure, wall <= factor * limit, source))
    target = "head start, safe calls: time to all results ≤ 1.02 × the physical limit"
    info, results = (
        _scenario(run, "head_start_safe"),
        run.value(PEERS, "head_start_safe.streaming_s"),
    )
    if info is None or results is None:
        found.append(_unmeasured(target, "#21"))
    else:
        limit = info["physical_limit_s"]
        figure = f"{results:.3f} s = {results / limit:.3f} × {limit:.2f} s"
        found.append(Verdict(target, figure, results <= 1.02 * limit, "#21"))
    cc = run.payload("claude_code")
    for key, info in cc.get("scenarios", {}).items():
        ours = run.value("claude_code", f"{key}.ours.median_s")
        limit = info.get("physical_limit_s") or 0.0
        if limit <= 0:
            continue
        target = f"Bash {info.get('label', key)}: ≤ 1.02 × the physical limit"
        if ours is None:
            found.append(_unmeasured(target, "#21"))
            continue
        figure = f"{ours:.3f} s = {ours / limit:.3f} × {limit:.2f} s"
        found.append(Verdict(target, figure, ours <= 1.02 * limit, "#21"))
    return found


def turns(run: Run) -> list[Verdict]:
    found = []
    target = "50 turns: no slower than the thinnest peer"
    ours = _wall(run, "turns_50", "ours")
    walls = {k: w for k in THIN_PEERS if (w := _wall(run, "turns_50", k)) is not None}
    if ours is None or not walls:
        found.append(_unmeasured(target, "DESIGN"))
    else:
        thinnest = min(walls, key=walls.__getitem__)
        figure = f"{ours:.3f} s vs {NAMES[thinnest]} {walls[thinnest]:.3f} s"
        found.append(Verdict(target, figure, ours <= walls[thinnest], "DESIGN"))
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
            found.append(_unmeasured(target, "#21"))
            continue
        shown = ", ".join(f"{NAMES[k]} {w:.3f} s" for k, w in runner.items())
        met = all(ours <= w for w in runner.values() if w is not None)
        found.append(Verdict(target, f"{ours:.3f} s vs {shown}", met, "#21"))
    target = "overhead per call at 400 turns ≤ 1.2 × that at 50"
    at_400 = run.value(PEERS, "turns_400.ours.overhead_ms")
    at_50 = run.value(PEERS, "turns_50.ours.overhead_ms")
    if at_400 is None or at_50 is None:
        found.append(_unmeasured(target, "#21"))
    else:
        figure = f"{at_400:.1f} ms vs {at_50:.1f} ms (×{at_400 / at_50:.2f})"
        found.append(Verdict(target, figure, at_400 <= 1.2 * at_50, "#21"))
    # A long notebook session must not pay for the cache and billing work on every turn.
    target = "300 turns ≤ 1.1 × the raw-client loop over the same turns"
    ours, bare = _wall(run, "turns_300", "ours"), _wall(run, "turns_300", "bare")
    if ours is None or bare is None:
        found.append(_unmeasured(target, "DESIGN"))
    else:
        figure = f"{ours:.3f} s vs {bare:.3f} s (×{ours / bare:.2f})"
        found.append(Verdict(target, figure, ours <= 1.1 * bare, "DESIGN"))
    return found


def claude_code(run: Run) -> list[Verdict]:
    found = []
    for key, info in run.payload("claude_code").get("scenarios", {}).items():
        target = f"Bash {info.get('label', key)}: ≤ 1.05 × Claude Code"
        ratio = run.value("claude_code", f"{key}.ratio_median")
        if ratio is None:
            found.append(_unmeasured(target, "bench_claude_code", "no Claude Code figure"))
            continue
        found.append(Verdict(target, f"×{ratio:.2f} (medians)", ratio <= 1.05, "bench_claude_code"))
    if not found:
        found.append(_unmeasured("Bash scenarios: ≤ 1.05 × Claude Code", "bench_claude_code"))
    return found


def _at_least(run: Run, benchmark: str, key: str, target: str, floor: float, unit: str) -> Verdict:
    value = run.value(benchmark, key)
    if value is None:
        return _unmeasured(target, "DESIGN")
    return Verdict(target, f"{_number(value)}{unit}", value >= floor, "DESIGN")


def _at_most(run: Run, benchmark: str, key: str, target: str, ceiling: float, unit: str) -> Verdict:
    value = run.value(benchmark, key)
    if value is None:
        return _unmeasured(target, "DESIGN")
    return Verdict(target, f"{_number(value)}{unit}", value <= ceiling, "DESIGN")


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
            found.append(_unmeasured(target, "DESIGN"))
            continue
        figure = f"{first:.1f}% first, {top5:.1f}% top 5"
        found.append(Verdict(target, figure, first >= 80 and top5 >= 95, "DESIGN"))
    found += [
        # Issue #32: the default semantic ranker must be light enough to be the default.
        _at_most(
            run,
            "bench_tool_search",
            "semantic_first_search_seconds",
            "ToolSearch's default semantic ranker: first search over 200 tools ≤ 1 s",
            1.0,
            " s",
        ),
        _at_most(
            run,
            "bench_tool_search",
            "semantic_installed_mb",
            "ToolSearch's default semantic ranker: its extra installs ≤ 150 MB",
            150.0,
            " MB",
        ),
        _at_most(run, "bench_tools", "grep_ratio_worst", "Grep: ≤ 1.2 × rg", 1.2, " × rg"),
        *(
            _at_most(
                run,
                "session_cost",
                f"{key}.ratio",
                f"{what}: billed-equivalent input ≤ {limit} × Claude Code's",
                limit,
                " × Claude Code's",
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
        ),
    ]
    for key, what in (
        ("shell.cold_ms", "fresh interpreter, cold"),
        ("shell.warm_ms", "fresh interpreter, warm"),
        ("kernel.cold_ms", "fresh kernel, cold"),
        ("kernel.warm_ms", "fresh kernel, warm"),
    ):
        target = f"`%load_ext jupyter_toolhost`, {what}: ≤ 150 ms"
        found.append(_at_most(run, "bench_load_ext", key, target, 150.0, " ms"))
    found.append(
        _at_least(
            run,
            "bench_permissions",
            "decisions_pure",
            "permission decisions, 1,000 rules: ≥ 50,000/s",
            50_000.0,
            "/s",
        ),
    )
    corpus = run.payload("permission_corpus")
    target = "permission attack corpus: 0 bypasses"
    if not corpus:
        found.append(_unmeasured(target, "bench_permission_corpus"))
    else:
        bypasses = int(corpus.get("bypasses", -1))
        figure = f"{bypasses} bypasses in {corpus.get('attack_runs')} runs"
        found.append(Verdict(target, figure, bypasses == 0, "bench_permission_corpus"))
    return found


CHECKS: tuple[Callable[[Run], list[Verdict]], ...] = (streamed, turns, claude_code, others)


def evaluate(run: Run) -> list[Verdict]:
    """Every target's verdict on `run`, in a fixed order."""
    return [verdict for check in CHECKS for verdict in check(run)]
