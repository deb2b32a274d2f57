"""ToolSearch on published MCP servers: does the ranking find the tool a user's request needs?

The pool is the live tool lists of the published servers in `benchmarks.mcp_catalog` (npm and
PyPI, pinned; installed into a cache folder on first use and started over stdio by the
project's own MCP client), read at run time and never stored. The queries,
`benchmarks/data/tool_search_queries.json`, are requests in users' words, each with the full
tool names (``mcp__<server>__<tool>``) that would do the job. They were written from the tool
lists before any ranker was run on them, and are not edited after seeing a score.

Split: each query's half is fixed by a hash of its text, computed before any scoring::

    split = "heldout" if int(hashlib.sha256(query.encode("utf-8")).hexdigest(), 16) % 2 else "tune"

The held-out half is the headline: the ranker must not be tuned on it, so its misses are
never printed. ``--show-misses`` prints the tune half's misses only.

Rankers, side by side on the same tools: ours (`jupyter_toolhost.disclosure.search_tools`,
five results), ours blended with the offline sentence-embedding model ("ours + semantic",
`jupyter_toolhost.disclosure.semantic.BlendedRanker`, when the ``semantic`` extra is
installed; a note says so when it is not) and a plain BM25 over name + description
(`bench_disclosure.plain_bm25`). A
query counts for "first" when the top result is one of its expected tools, and for "top 5"
when any of the first five is. Queries whose expected tools all belong to servers that did
not start are left out and counted. For the semantic ranker the run also reports its first
search (loading the model and embedding every tool) and the time per query after it.

Run: ``.venv/bin/python -m benchmarks.bench_tool_search [--show-misses]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.bench_disclosure import plain_bm25
from benchmarks.common import Measure, median, print_table, write_results
from benchmarks.installed_size import extra_sizes
from benchmarks.mcp_catalog import SERVERS, Catalog, load_catalog
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.disclosure import search_tools
from jupyter_toolhost.disclosure.model_download import FILES as MODEL_FILES
from jupyter_toolhost.disclosure.onnx_encoder import onnx_available
from jupyter_toolhost.disclosure.semantic import BlendedRanker, torch_available

QUERY_FILE = Path(__file__).resolve().parent / "data" / "tool_search_queries.json"
SPLITS = ("heldout", "tune")
TOP = 5
POOL = 200
EXTRA_OF_BACKEND = {"onnx": "search", "torch": "semantic"}
"""The extra that installs each embedding backend (its installed size is reported)."""
"""Tools in the pool the first-search time is measured on (the target: ≤ 1 s with 200)."""

Ranker = Callable[[str, Sequence[Tool[Any]]], list[str]]


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    expected: tuple[str, ...]
    split: str


def split_of(query: str) -> str:
    """The documented split rule (see the module docstring and the query file)."""
    return "heldout" if int(hashlib.sha256(query.encode("utf-8")).hexdigest(), 16) % 2 else "tune"


def load_queries(path: Path = QUERY_FILE) -> list[Query]:
    """The queries, checking that each one's split is the one the rule gives."""
    data = json.loads(path.read_text(encoding="utf-8"))
    queries = [Query(q["query"], tuple(q["expected"]), q["split"]) for q in data["queries"]]
    wrong = [q.text for q in queries if q.split != split_of(q.text)]
    if wrong:
        raise ValueError(f"{len(wrong)} queries do not follow the split rule, e.g. {wrong[0]!r}")
    return queries


def ours(query: str, tools: Sequence[Tool[Any]]) -> list[str]:
    return [tool.name for tool in search_tools(query, tools, max_results=TOP).tools]


RANKERS: dict[str, tuple[str, Ranker]] = {
    "ours": ("ToolSearch", ours),
    "bm25": ("plain BM25", plain_bm25),
}


def semantic(blend: BlendedRanker) -> Ranker:
    """ToolSearch's ranking with the blended (keywords + sentence-embedding) ranker."""

    def rank(query: str, tools: Sequence[Tool[Any]]) -> list[str]:
        found = search_tools(query, tools, max_results=TOP, ranker=blend)
        return [tool.name for tool in found.tools]

    return rank


def rankers() -> tuple[dict[str, tuple[str, Ranker]], dict[str, BlendedRanker]]:
    """The rankers to compare: "ours + semantic" (the default backend, ONNX when its extra
    is installed) and "ours + semantic (torch)" join when their extras are installed."""
    blends: dict[str, BlendedRanker] = {}
    if onnx_available():
        blends["semantic"] = BlendedRanker(backend="onnx")
    if torch_available():
        blends["semantic_torch" if blends else "semantic"] = BlendedRanker(backend="torch")
    ranked = {"ours": RANKERS["ours"]}
    for key, blend in blends.items():
        label = f"ToolSearch + semantic ({blend.embedding.backend})"
        ranked[key] = (label, semantic(blend))
    ranked["bm25"] = RANKERS["bm25"]
    return ranked, blends


def score(
    queries: Sequence[Query], tools: Sequence[Tool[Any]], rank: Ranker
) -> tuple[int, int, list[tuple[Query, list[str]]]]:
    """Hits at first place, hits in the top five, and the queries missed with their ranking."""
    first = top5 = 0
    missed: list[tuple[Query, list[str]]] = []
    for query in queries:
        found = rank(query.text, tools)[:TOP]
        first += bool(found) and found[0] in query.expected
        hit = any(name in query.expected for name in found)
        top5 += hit
        if not found or found[0] not in query.expected:
            missed.append((query, found))
    return first, top5, missed


def usable(queries: Sequence[Query], names: set[str]) -> tuple[list[Query], int]:
    """The queries with an expected tool in the pool (others' servers did not start)."""
    kept: list[Query] = []
    for query in queries:
        present = tuple(name for name in query.expected if name in names)
        if present:
            kept.append(Query(query.text, present, query.split))
    return kept, len(queries) - len(kept)


def report_servers(catalog: Catalog) -> None:
    print("\nServers (tool lists read live)")
    width = max(len(s.label) for s in catalog.servers)
    for server in catalog.servers:
        if server.name in catalog.counts:
            state = f"{catalog.counts[server.name]:3d} tools"
        else:
            state = f"FAILED — {catalog.failed.get(server.name, 'not started')}"
        print(f"  {server.name:<20} {server.registry:<5} {server.label:<{width}}  {state}")
    registries = Counter(s.registry for s in catalog.servers if s.name in catalog.counts)
    print(
        f"  {len(catalog.counts)} of {len(catalog.servers)} servers started "
        f"({registries['npm']} npm, {registries['pypi']} PyPI), {len(catalog.tools)} tools"
    )


def print_misses(missed: Sequence[tuple[Query, list[str]]], label: str = "ToolSearch") -> None:
    print(f"\nTune-half misses of {label} at first place ({len(missed)}; held-out never shown)")
    for query, found in missed:
        where = next((i + 1 for i, name in enumerate(found) if name in query.expected), None)
        rank = f"expected at #{where}" if where else "expected not in top 5"
        print(f"\n  {query.text!r}  [{rank}]")
        print(f"    expected: {', '.join(query.expected)}")
        for i, name in enumerate(found, 1):
            print(f"    {i}. {name}")


def semantic_timings(
    key: str, blend: BlendedRanker, tools: Sequence[Tool[Any]], *, pool: int = POOL
) -> list[Measure]:
    """The first search of a new ranker (model load + every tool embedded) over
    `pool` tools (the catalog's, then renamed copies of them), and the median time per
    query after it, on queries of the benchmark's own making (none of the split's)."""
    many = list(tools)[:pool]
    while len(many) < pool and tools:
        copy = len(many) // len(tools)
        many += [replace(t, name=f"{t.name}_copy{copy}") for t in tools][: pool - len(many)]
    started = time.perf_counter()
    blend.rank("warm up the model", many)
    first = time.perf_counter() - started
    probes = ["list the files in a folder", "send a message to the team", "what is the weather"]
    samples = []
    for probe in probes * 3:
        started = time.perf_counter()
        blend.rank(probe, tools)
        samples.append(time.perf_counter() - started)
    load = blend.embedding.load_seconds or 0.0
    backend = blend.embedding.backend
    extra = EXTRA_OF_BACKEND.get(backend, "")
    sizes = extra_sizes(extra) if extra else {}
    largest = ", ".join(f"{name} {mb:.0f}" for name, mb in list(sizes.items())[:4])
    numpy = sizes.get("numpy", 0.0)
    # The onnx backend's model files are not installed: they are downloaded into the cache.
    cached = sum(f.size for f in MODEL_FILES) / 1e6 if backend == "onnx" else 0.0
    kept = f"; the model files in the cache: {cached:.1f} MB more" if cached else ""
    return [
        Measure(
            f"{key}_installed_mb",
            f"semantic ({backend}): what the [{extra}] extra installs",
            sum(sizes.values()),
            "MB",
            f"{sum(sizes.values()) - numpy:.0f} MB beside numpy; largest: {largest}{kept}",
        ),
        Measure(
            f"{key}_first_search_seconds",
            f"semantic ({backend}): first search, {len(many)} tools",
            first,
            "s",
            f"model load {load:.2f} s (a download of its files included, if they were not "
            f"cached), then {blend.embedding.embedded} tools embedded",
        ),
        Measure(
            f"{key}_query_ms",
            f"semantic ({backend}): per query after that",
            1000 * median(samples),
            "ms",
            f"median of {len(samples)}, {len(tools)} tools, keywords + embedding",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="print ToolSearch's misses on the tune half (never the held-out half)",
    )
    parser.add_argument(
        "--misses-of",
        choices=("ours", "semantic", "semantic_torch"),
        default="ours",
        help="whose tune-half misses --show-misses prints (semantic: the blended ranker)",
    )
    args = parser.parse_args(argv)

    queries = load_queries()
    started = time.perf_counter()
    catalog = load_catalog(SERVERS)
    setup_seconds = time.perf_counter() - started
    report_servers(catalog)
    if not catalog.tools:
        print("no MCP server started; nothing to measure", file=sys.stderr)
        return 1

    kept, dropped = usable(queries, {tool.name for tool in catalog.tools})
    by_split = {split: [q for q in kept if q.split == split] for split in SPLITS}
    counts = ", ".join(f"{split} {len(by_split[split])}" for split in SPLITS)
    print(f"\nQueries: {len(kept)} ({counts})", end="")
    print(f"; {dropped} left out: their servers did not start" if dropped else "")

    compared, blends = rankers()
    if not blends:
        print(
            "\nNote: no 'ours + semantic' rows: neither the search extra (ONNX) nor the "
            "semantic extra (PyTorch) is installed (pip install -e '.[search]')"
        )
    measures = [
        Measure(
            "servers",
            "servers started",
            len(catalog.counts),
            "servers",
            f"of {len(catalog.servers)}",
        ),
        Measure("tools", "tools in the pool", len(catalog.tools), "tools"),
        Measure("queries_heldout", "queries, held-out half", len(by_split["heldout"]), "queries"),
        Measure("queries_tune", "queries, tune half", len(by_split["tune"]), "queries"),
    ]
    tune_missed: list[tuple[Query, list[str]]] = []
    for key, blend in blends.items():
        measures.extend(semantic_timings(key, blend, catalog.tools))
    rank_started = time.perf_counter()
    for split in SPLITS:
        group = by_split[split]
        if not group:
            continue
        title = "HELD-OUT (headline)" if split == "heldout" else "tune half (reference)"
        for key, (label, rank) in compared.items():
            first, top5, missed = score(group, catalog.tools, rank)
            if split == "tune" and key == args.misses_of:
                tune_missed = missed
            n = f"{first}/{len(group)}"
            measures.append(
                Measure(
                    f"{split}_{key}_first",
                    f"{title}: {label} first",
                    100 * first / len(group),
                    "%",
                    n,
                )
            )
            measures.append(
                Measure(
                    f"{split}_{key}_top5",
                    f"{title}: {label} top 5",
                    100 * top5 / len(group),
                    "%",
                    f"{top5}/{len(group)}",
                )
            )
    rank_seconds = time.perf_counter() - rank_started
    measures.append(
        Measure(
            "setup_seconds",
            "install + start servers",
            setup_seconds,
            "s",
            "install is skipped when cached",
        )
    )
    measures.append(Measure("rank_seconds", "ranking, all queries x rankers", rank_seconds, "s"))

    print_table("ToolSearch on published MCP servers (users' queries)", measures)
    for blend in blends.values():
        if blend.failure is not None:
            print(f"\nA semantic model failed to load; its rows are lexical: {blend.failure}")
    if args.show_misses:
        if args.misses_of in compared:
            print_misses(tune_missed, compared[args.misses_of][0])
        else:
            print(f"\n--misses-of {args.misses_of}: that ranker did not run")
    print(f"\nwrote {write_results('bench_tool_search', measures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
