"""ToolSearch: ranking quality on a catalog of 108 MCP-style tools, query forms, the tool itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.disclosure import search_tools
from jupyter_toolhost.disclosure.search import NAME_WEIGHT, query_weights
from jupyter_toolhost.disclosure.text import split_tool_name, stem, terms
from jupyter_toolhost.mcp.convert import listed_tools
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools.tool_search import TOOL as TOOL_SEARCH

CATALOG = Path(__file__).parents[1] / "data" / "tool_catalog.json"


def catalog() -> tuple[list[Tool[Any]], list[dict[str, str]]]:
    data = json.loads(CATALOG.read_text(encoding="utf-8"))
    tools = listed_tools(data["servers"])
    return tools, data["queries"]


def test_catalog_is_big_enough_and_consistent() -> None:
    tools, queries = catalog()
    names = {tool.name for tool in tools}
    assert len(tools) >= 100 and len(names) == len(tools)
    assert len({tool.name.split("__")[1] for tool in tools}) >= 12
    assert len(queries) >= 60
    assert all(query["expected"] in names for query in queries)


def test_ranking_finds_the_right_tool_for_task_phrased_queries() -> None:
    tools, queries = catalog()
    first = top5 = 0
    misses: list[str] = []
    for query in queries:
        found = [tool.name for tool in search_tools(query["query"], tools).tools]
        first += bool(found) and found[0] == query["expected"]
        top5 += query["expected"] in found
        if query["expected"] not in found:
            misses.append(f"{query['query']!r} -> {found}")
    assert first / len(queries) >= 0.80, f"top-1 {first}/{len(queries)}"
    assert top5 / len(queries) >= 0.95, f"top-5 {top5}/{len(queries)}: {misses}"


def test_select_exact_names_and_required_words() -> None:
    tools, _ = catalog()
    picked = search_tools(
        "select:mcp__ci__cancel_run, mcp__nope__x,mcp__git__git_log", tools, max_results=5
    )
    assert [t.name for t in picked.tools] == ["mcp__ci__cancel_run", "mcp__git__git_log"]
    assert picked.missing == ["mcp__nope__x"]

    assert search_tools("git_log", tools).tools[0].name == "mcp__git__git_log"
    assert search_tools("mcp__time__convert_time", tools).tools[0].name == (
        "mcp__time__convert_time"
    )
    required = search_tools("+calendar delete", tools).tools
    assert required and all("calendar" in t.name for t in required)
    assert required[0].name == "mcp__calendar__delete_event"
    assert search_tools("zzqx unknownword", tools).tools == []
    assert len(search_tools("list", tools, max_results=3).tools) == 3


def test_tool_names_split_on_case_and_separators() -> None:
    assert split_tool_name("mcp__forge__createPullRequest") == (
        "forge",
        ["create", "pull", "request"],
    )
    assert split_tool_name("get-HTTPHeaders_now") == (None, ["get", "http", "headers", "now"])
    assert stem("staged") == stem("stage") == stem("staging")
    assert terms("What are the Files?") == [stem("files")]


async def test_tool_search_through_the_pipeline(tmp_path: Path) -> None:
    tools, _ = catalog()
    context = ToolUseContext(options=ToolUseOptions(tools=[TOOL_SEARCH, *tools]), cwd=tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path / "results"))

    result = await pipeline.run(
        ToolCall(id="t1", name="ToolSearch", input={"query": "did the nightly build pass?"}),
        context,
    )
    assert not result.is_error
    assert isinstance(result.content, list)
    references = result.content
    assert all(block["type"] == "tool_reference" for block in references), "references alone"
    assert references[0] == {"type": "tool_reference", "tool_name": "mcp__ci__get_run_status"}
    assert len(references) == 5

    empty = await pipeline.run(ToolCall(id="t2", name="ToolSearch", input={"query": "  "}), context)
    assert empty.is_error and "empty" in str(empty.content)
    none = await pipeline.run(
        ToolCall(id="t3", name="ToolSearch", input={"query": "zzqx", "max_results": 2}), context
    )
    assert not none.is_error and none.content == [
        {"type": "text", "text": "No deferred tools match 'zzqx'."}
    ]
    missing = await pipeline.run(
        ToolCall(id="t4", name="ToolSearch", input={"query": "select:Nope,Gone"}), context
    )
    assert missing.content == [
        {
            "type": "text",
            "text": "No deferred tools match 'select:Nope,Gone'.\nNot found: Nope, Gone",
        }
    ]
    exact = await pipeline.run(
        ToolCall(id="t5", name="ToolSearch", input={"query": "get_run_status"}), context
    )
    assert exact.content[0] == {"type": "tool_reference", "tool_name": "mcp__ci__get_run_status"}
    assert TOOL_SEARCH.flag(TOOL_SEARCH.is_read_only, None)
    assert TOOL_SEARCH.flag(TOOL_SEARCH.is_concurrency_safe, None)
    assert not TOOL_SEARCH.should_defer


def test_query_values_weigh_less_than_the_work_asked_for() -> None:
    weights = query_weights(
        "Read https://news.example.com/item?id=40 for Marco on 2024-06-12, sheet B2:C9",
        expansion_weight=0.4,
        expand=False,
    )
    assert "new" not in weights and "item" not in weights, "a URL's words are values"
    assert weights[stem("url")] == 1.0, "its shape still counts"
    assert not any(term.isdigit() for term in weights), "numbers are values"
    assert weights[stem("marco")] == NAME_WEIGHT, "a capitalised word inside is a name"
    assert weights[stem("read")] == 1.0, "the first word is capitalised as a sentence starts"
    assert weights[stem("cell")] == 1.0 and weights[stem("range")] == 1.0
