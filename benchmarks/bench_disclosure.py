"""Deferred disclosure: bytes of the `tools` array with and without deferral, and ToolSearch's
hit rates on task-phrased queries, beside a plain BM25 over name + description as the peer.

Pools: the 108 MCP-style tools of `tests/data/tool_catalog.json` (written for this project,
with 88 queries), and — when `npx` can start them — the real tool lists of three published
MCP servers from the npm registry (filesystem, memory, everything), fetched at run time and
never stored, with a short query set of our own about their tools. Tokens are bytes / 4 (no
offline token counter is available). Run: ``python -m benchmarks.bench_disclosure``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Measure, print_table, write_results
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.disclosure import search_tools, tools_for_request
from jupyter_toolhost.mcp import McpManager, McpServerConfig
from jupyter_toolhost.mcp.convert import listed_tools
from jupyter_toolhost.testing.api_view import billed_bytes, cached_prefix
from jupyter_toolhost.tools.tool_search import with_tool_search

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "tests" / "data" / "tool_catalog.json"

NPM_SERVERS = {
    "filesystem": ["@modelcontextprotocol/server-filesystem", "{tmp}"],
    "memory": ["@modelcontextprotocol/server-memory"],
    "everything": ["@modelcontextprotocol/server-everything", "stdio"],
}
# Our own task phrasings for tools of the published servers (their names are facts; their
# descriptions are read at run time and not kept).
NPM_QUERIES = [
    ("show me the contents of notes.txt", "mcp__filesystem__read_text_file"),
    ("open these three config files at once", "mcp__filesystem__read_multiple_files"),
    ("save the report as summary.md", "mcp__filesystem__write_file"),
    ("change the port number in server.conf", "mcp__filesystem__edit_file"),
    ("make a folder called archive", "mcp__filesystem__create_directory"),
    ("what is inside the downloads folder?", "mcp__filesystem__list_directory"),
    ("rename old.log to new.log", "mcp__filesystem__move_file"),
    ("find every png file in the project", "mcp__filesystem__search_files"),
    ("how big is data.csv and when was it changed?", "mcp__filesystem__get_file_info"),
    ("which directories can you access?", "mcp__filesystem__list_allowed_directories"),
    ("show the whole folder hierarchy as a tree", "mcp__filesystem__directory_tree"),
    ("remember that Ana likes tea", "mcp__memory__add_observations"),
    ("add Carlos and Dana as new people to the knowledge graph", "mcp__memory__create_entities"),
    ("record that Carlos manages Dana", "mcp__memory__create_relations"),
    ("what do you know about Carlos?", "mcp__memory__search_nodes"),
    ("show everything in the knowledge graph", "mcp__memory__read_graph"),
    ("forget the entity named OldVendor", "mcp__memory__delete_entities"),
    ("repeat this text back to me", "mcp__everything__echo"),
]


def catalog() -> tuple[list[Tool[Any]], list[tuple[str, str]]]:
    data = json.loads(CATALOG.read_text(encoding="utf-8"))
    tools = listed_tools(data["servers"])
    return tools, [(q["query"], q["expected"]) for q in data["queries"]]


# ── the peer: plain BM25 over name + description ─────────────────────────────────────────

_WORD = re.compile(r"[a-z0-9]+")


def _plain_terms(text: str) -> list[str]:
    return _WORD.findall(text.replace("_", " ").replace("-", " ").lower())


def plain_bm25(
    query: str, tools: Sequence[Tool[Any]], k1: float = 1.2, b: float = 0.75
) -> list[str]:
    docs = [Counter(_plain_terms(f"{t.name} {t.description()}")) for t in tools]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(docs)
    frequency = Counter(term for d in docs for term in d)
    scores = [0.0] * len(docs)
    for term in set(_plain_terms(query)):
        if term not in frequency:
            continue
        idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
        for i, d in enumerate(docs):
            tf = d.get(term, 0)
            if tf:
                scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / average))
    order = sorted(range(len(docs)), key=lambda i: (-scores[i], tools[i].name))
    return [tools[i].name for i in order if scores[i] > 0]


def hit_rates(
    queries: Sequence[tuple[str, str]], tools: Sequence[Tool[Any]], rank: Any
) -> tuple[float, float]:
    first = top5 = 0
    for query, expected in queries:
        found = rank(query, tools)[:5]
        first += bool(found) and found[0] == expected
        top5 += expected in found
    return first / len(queries), top5 / len(queries)


def ours(query: str, tools: Sequence[Tool[Any]]) -> list[str]:
    return [tool.name for tool in search_tools(query, tools, max_results=5).tools]


def size_measures(prefix: str, label: str, tools: list[Tool[Any]]) -> list[Measure]:
    pool = with_tool_search(tools)
    everything = [tool.to_api() for tool in tools]
    loaded_all = len(json.dumps(everything).encode())
    request = tools_for_request(pool, [])
    deferred = len(json.dumps(request.api_tools).encode())
    attachment = len((request.attachment or "").encode())
    with_attachment = deferred + attachment
    return [
        Measure(f"{prefix}_tools", f"{label}: tools", len(tools), "tools"),
        Measure(
            f"{prefix}_bytes_all",
            f"{label}: tools array, all loaded",
            loaded_all,
            "bytes",
            f"~{loaded_all // 4:,} tokens",
        ),
        Measure(
            f"{prefix}_bytes_deferred",
            f"{label}: tools array, deferred",
            deferred,
            "bytes",
            f"~{deferred // 4:,} tokens (ToolSearch only)",
        ),
        Measure(
            f"{prefix}_bytes_attachment",
            f"{label}: deferred-tools attachment",
            attachment,
            "bytes",
            "names list, sent once",
        ),
        Measure(
            f"{prefix}_reduction_tools",
            f"{label}: tools array reduction",
            100 * (1 - deferred / loaded_all),
            "%",
            "target >= 90%",
        ),
        Measure(
            f"{prefix}_reduction_total",
            f"{label}: reduction incl. attachment",
            100 * (1 - with_attachment / loaded_all),
            "%",
        ),
    ]


def _found(names: Sequence[str]) -> list[dict[str, Any]]:
    """A history in which ToolSearch found `names` (what the styles differ on)."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "x"}}
    refs = [{"type": "tool_reference", "tool_name": name} for name in names]
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": refs}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]


def style_measures(prefix: str, label: str, tools: list[Tool[Any]]) -> list[Measure]:
    """Per style, what a request costs once three deferred tools were found: bytes of the
    `tools` array, the bytes the API bills (deferred tools nothing references are not
    billed), and whether the discovery changed the cached prefix."""
    pool = with_tool_search(tools)
    found = [tool.name for tool in tools[:3]]
    measures: list[Measure] = []
    for name, style, server in (
        ("discovered", "discovered", None),
        ("defer_loading", "defer_loading", None),
        ("server_bm25", "defer_loading", "bm25"),
    ):
        before = tools_for_request(pool, _found([]), style=style, server_search=server)
        after = tools_for_request(pool, _found(found), style=style, server_search=server)
        body = {"messages": _found(found), "tools": after.api_tools}
        raw = json.dumps(after.api_tools).encode()
        billed = billed_bytes(body, raw)
        same = cached_prefix({"tools": before.api_tools}) == cached_prefix(body)
        measures += [
            Measure(
                f"{prefix}_{name}_bytes",
                f"{label}, {name}: tools bytes, 3 found",
                len(raw),
                "bytes",
                f"billed ~{billed // 4:,} tokens (bytes / 4)",
            ),
            Measure(
                f"{prefix}_{name}_prefix_kept",
                f"{label}, {name}: cached prefix kept by a discovery",
                float(same),
                "yes=1",
            ),
        ]
    return measures


def rank_measures(
    prefix: str, label: str, queries: Sequence[tuple[str, str]], tools: Sequence[Tool[Any]]
) -> list[Measure]:
    top1, top5 = hit_rates(queries, tools, ours)
    peer1, peer5 = hit_rates(queries, tools, plain_bm25)
    n = f"{len(queries)} queries"
    return [
        Measure(
            f"{prefix}_top1", f"{label}: ToolSearch top-1", 100 * top1, "%", f"{n}, target >= 80%"
        ),
        Measure(
            f"{prefix}_top5", f"{label}: ToolSearch top-5", 100 * top5, "%", f"{n}, target >= 95%"
        ),
        Measure(f"{prefix}_peer_top1", f"{label}: plain BM25 top-1", 100 * peer1, "%", "peer"),
        Measure(f"{prefix}_peer_top5", f"{label}: plain BM25 top-5", 100 * peer5, "%", "peer"),
    ]


async def npm_tools() -> tuple[list[Tool[Any]], str]:
    npx = shutil.which("npx")
    if npx is None:
        return [], "npx is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        configs = [
            McpServerConfig.stdio(
                name, npx, "-y", *[a.format(tmp=tmp) for a in args], connect_timeout=120.0
            )
            for name, args in NPM_SERVERS.items()
        ]
        manager = McpManager(configs)
        try:
            await manager.start()
            tools = [t for t in manager.tools() if t.name.startswith("mcp__")]
            failed = [f"{s.name}: {s.error}" for s in manager.status() if s.state != "connected"]
        finally:
            await manager.close()
    return tools, "; ".join(failed)


def main() -> int:
    tools, queries = catalog()
    measures = size_measures("catalog", "catalog", tools)
    measures += style_measures("catalog", "catalog", tools)
    measures += rank_measures("catalog", "catalog", queries, tools)

    real, problem = asyncio.run(npm_tools())
    if real:
        names = {t.name for t in real}
        usable = [(q, e) for q, e in NPM_QUERIES if e in names]
        measures += size_measures("npm", "npm servers", real)
        measures += rank_measures("npm", "npm servers", usable, real)
        combined = [*tools, *real]
        measures += size_measures("combined", "catalog + npm", combined)
        measures += rank_measures("combined", "catalog + npm", [*queries, *usable], combined)
    if problem:
        print(f"npm servers: {problem}", file=sys.stderr)

    print_table("Deferred disclosure and ToolSearch", measures)
    print(f"\nwrote {write_results('bench_disclosure', measures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
