"""The rows of the report's second table: each benchmark's headline figures, with the
reference or peer measured in the same run and the target (for `report.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report_parts import Run

Row = list[str]


def other_rows(run: Run) -> list[Row]:
    """measure | this project | reference or peer (same run) | target."""
    rows: list[Row] = []
    for build in ROW_BUILDERS:
        rows += build(run)
    return rows


def _head_start(run: Run) -> list[Row]:
    rows = []
    for key in ("head_start_safe", "head_start_unsafe"):
        streamed = run.value("bench_peers", f"{key}.streaming_s")
        whole = run.value("bench_peers", f"{key}.whole_message_s")
        info = run.payload("bench_peers").get("scenarios", {}).get(key, {})
        if streamed is None or whole is None:
            continue
        rows.append(
            [
                f"streaming head start, {info.get('label', key)}: time to all results",
                f"{_s(streamed)} (limit {_s(info.get('physical_limit_s', 0))})",
                f"the same executor after the whole message: {_s(whole)}",
                "≤ 1.02 × limit" if key == "head_start_safe" else "",
            ]
        )
    return rows


def _orchestration(run: Run) -> list[Row]:
    pipeline = run.value("bench_orchestration", "pipeline_overhead_us")
    executor = run.value("bench_orchestration", "run_tools_overhead_us")
    if pipeline is None:
        return []
    tail = "" if executor is None else f"; {executor:.0f} µs through the executor"
    return [["pipeline overhead per no-op call (median)", f"{pipeline:.0f} µs{tail}", "", ""]]


def _disclosure(run: Run) -> list[Row]:
    every = run.value("bench_disclosure", "catalog_bytes_all")
    deferred = run.value("bench_disclosure", "catalog_bytes_deferred")
    cut = run.value("bench_disclosure", "catalog_reduction_tools")
    total = run.value("bench_disclosure", "catalog_reduction_total")
    tools = run.value("bench_disclosure", "catalog_tools")
    if None in (every, deferred, cut, total, tools):
        return []
    assert every is not None and deferred is not None and cut is not None and tools is not None
    return [
        [
            f"`tools` bytes, {tools:.0f} MCP-style tools, deferred vs all loaded",
            f"{deferred:,.0f} vs {every:,.0f} ({cut:.1f}% fewer; {total:.1f}% with the names list)",
            "",
            "≥ 90% fewer",
        ]
    ]


def _tool_search(run: Run) -> list[Row]:
    rows = []
    n = run.value("bench_tool_search", "queries_heldout")
    tools = run.value("bench_tool_search", "tools")
    for split, what in (("heldout", "held-out half (headline)"), ("tune", "tune half")):
        first = run.value("bench_tool_search", f"{split}_ours_first")
        top5 = run.value("bench_tool_search", f"{split}_ours_top5")
        if first is None or top5 is None:
            continue
        ours = f"{first:.1f}% first, {top5:.1f}% top 5"
        for key, label in (("semantic", "ONNX MiniLM blend"), ("semantic_torch", "torch MiniLM")):
            sem1 = run.value("bench_tool_search", f"{split}_{key}_first")
            sem5 = run.value("bench_tool_search", f"{split}_{key}_top5")
            if sem1 is not None and sem5 is not None:
                ours += f"; {label} {sem1:.1f}% / {sem5:.1f}%"
        bm1 = run.value("bench_tool_search", f"{split}_bm25_first")
        bm5 = run.value("bench_tool_search", f"{split}_bm25_top5")
        peer = "" if bm1 is None or bm5 is None else f"plain BM25 {bm1:.1f}% / {bm5:.1f}%"
        size = f"{n:.0f} queries, " if split == "heldout" and n is not None else ""
        pool = "" if tools is None else f"{tools:.0f} tools of published MCP servers"
        target = "≥ 80% first, ≥ 95% top 5" if split == "heldout" else ""
        rows.append([f"ToolSearch, {what}: {size}{pool}", ours, peer, target])
    rankers = (("semantic", "the default semantic ranker"), ("semantic_torch", "the torch one"))
    for key, what in rankers:
        first_search = run.value("bench_tool_search", f"{key}_first_search_seconds")
        per_query = run.value("bench_tool_search", f"{key}_query_ms")
        if first_search is None or per_query is None:
            continue
        size = run.value("bench_tool_search", f"{key}_installed_mb")
        installed = "" if size is None else f"; installs {size:.0f} MB"
        rows.append(
            [
                f"ToolSearch, {what}: first search over 200 tools (model load + embedding), "
                "then per query; installed size of its extra",
                f"{first_search:.1f} s, then {per_query:.0f} ms{installed}",
                "",
                "≤ 1 s first, ≤ 150 MB" if key == "semantic" else "",
            ]
        )
    setup = run.value("bench_tool_search", "setup_seconds")
    if setup is not None:
        rows.append(
            [
                "ToolSearch benchmark: install (when not cached) and start the servers",
                f"{setup:.0f} s",
                "",
                "",
            ]
        )
    return rows


def _tools(run: Run) -> list[Row]:
    rows = []
    worst = run.value("bench_tools", "grep_ratio_worst")
    files = run.value("bench_tools", "grep_tree_files")
    if worst is not None:
        tree = "" if files is None else f" ({files:,.0f} entries)"
        rows.append(
            [
                f"Grep on a copy of site-packages{tree}, worst of three queries (fastest runs)",
                f"{worst:.2f} × `rg`",
                "the `rg` binary",
                "≤ 1.2 × rg",
            ]
        )
    wall = run.value("bench_tools", "bash_200mb_wall_s")
    growth = run.value("bench_tools", "bash_200mb_peak_rss_growth_mb")
    if wall is not None and growth is not None:
        rows.append(
            [
                "Bash printing 200 MB: wall, peak RSS growth",
                f"{wall:.2f} s, {growth:.2f} MB",
                "",
                "≤ 30 MB",
            ]
        )
    return rows


def _load_ext(run: Run) -> list[Row]:
    rows = []
    for where in ("shell", "kernel"):
        cold = run.value("bench_load_ext", f"{where}.cold_ms")
        warm = run.value("bench_load_ext", f"{where}.warm_ms")
        if cold is None or warm is None:
            continue
        refs = [
            f"{_label(run, 'bench_load_ext', k).removeprefix('reference: ')} {v:.0f} ms"
            for k in run.payload("bench_load_ext").get("measures", {})
            if k.startswith(f"{where}.ref_") and (v := run.value("bench_load_ext", k)) is not None
        ]
        place = "a fresh interpreter" if where == "shell" else "a fresh kernel (request → reply)"
        rows.append(
            [
                f"`%load_ext jupyter_toolhost` in {place}, median",
                f"cold {cold:.0f} ms, warm {warm:.0f} ms",
                "; ".join(refs),
                "≤ 150 ms",
            ]
        )
    return rows


def _permissions(run: Run) -> list[Row]:
    rate = run.value("bench_permissions", "decisions_pure")
    if rate is None:
        return []
    real = run.value("bench_permissions", "decisions_os")
    ref = run.value("bench_permissions", "reference_ops")
    rel = run.value("bench_permissions", "decisions_pure_relative")
    ours = f"{rate:,.0f}/s lexical resolver" + ("" if real is None else f", {real:,.0f}/s realpath")
    peer = "" if ref is None else f"machine reference {ref:,.0f} op/s"
    peer += "" if rel is None else f" ({rel:.3f} decisions per reference op)"
    return [["permission decisions, 1,000 rules", ours, peer, "≥ 50,000/s"]]


def _corpus(run: Run) -> list[Row]:
    corpus = run.payload("permission_corpus")
    if not corpus:
        return []
    kept = f"controls kept {corpus.get('controls_kept')} of {corpus.get('controls_total')}"
    return [
        [
            f"permission attack corpus: {corpus.get('attacks')} attacks × "
            f"{len(corpus.get('modes', []))} modes through the real tools",
            f"{corpus.get('bypasses')} bypasses in {corpus.get('attack_runs')} runs; {kept}",
            "",
            "0 bypasses",
        ]
    ]


SUMMARISED = {
    "bench_peers", "claude_code", "bench_orchestration", "bench_load_ext", "bench_disclosure",
    "bench_tool_search", "bench_tools", "bench_permissions", "permission_corpus",
    "everyday_commands",  # its own table: report_everyday.py
}  # fmt: skip
"""Benchmarks the rows above summarise (bench_peers and claude_code: the peers table)."""


def _unsummarised(run: Run) -> list[Row]:
    """A benchmark with no summary row yet: every one of its measures, never nothing."""
    rows = []
    for name in sorted(set(run.results) - SUMMARISED):
        measures = run.payload(name).get("measures", {}).values()
        shown = "; ".join(
            f"{m['label']} {_number(float(m['value']))} {m['unit']}" for m in measures
        )
        rows.append([f"`{name}`", shown or "no figures", "", ""])
    return rows


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _label(run: Run, benchmark: str, key: str) -> str:
    return str(run.payload(benchmark).get("measures", {}).get(key, {}).get("label", key))


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


ROW_BUILDERS: tuple[Callable[[Run], list[Row]], ...] = (
    _head_start,
    _orchestration,
    _load_ext,
    _disclosure,
    _tool_search,
    _tools,
    _permissions,
    _corpus,
    _unsummarised,
)
