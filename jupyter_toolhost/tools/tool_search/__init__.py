"""ToolSearch: finds deferred tools and loads them by answering with `tool_reference` blocks.

The tool reads the whole pool from `context.options.tools`, searches the deferred tools
among them (`disclosure.search`), and returns one ``{"type": "tool_reference"}`` block per
match plus a short text line each. The loop's next request then carries those tools
(`disclosure.tools_for_request` finds the references in the history). It is never
deferred, read-only and safe to run beside other calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...context import ToolUseContext
from ...disclosure import SEARCHES_DEFERRED_TOOLS, is_deferred, search_tools
from ...tool import Tool, build_tool
from ...types import ContentBlock, ToolInputError
from .prompt import DESCRIPTION, NAME, SEARCH_HINT

DEFAULT_MAX_RESULTS = 5
SUMMARY_CHARS = 160


class ToolSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description='Keywords for the task, or "select:Name1,Name2" for exact tool names.'
    )
    max_results: int = Field(
        default=DEFAULT_MAX_RESULTS, ge=1, le=50, description="How many tools at most."
    )


def _enabled(tool: Tool[Any]) -> bool:
    try:
        return bool(tool.is_enabled())
    except Exception:
        return False


def _summary(tool: Tool[Any]) -> str:
    try:
        text = " ".join(tool.description().split())
    except Exception:
        return ""
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def search_result_content(
    matches: Sequence[Tool[Any]], *, query: str, missing: Sequence[str] = ()
) -> list[ContentBlock]:
    """ToolSearch's tool_result content: a text summary, then one tool_reference per match."""
    lines: list[str] = []
    if matches:
        lines.append(f"Loaded {len(matches)} tool{'s' if len(matches) != 1 else ''}:")
        lines.extend(f"- {tool.name}: {_summary(tool)}" for tool in matches)
    else:
        lines.append(f"No deferred tools match {query!r}.")
    if missing:
        lines.append("Not found: " + ", ".join(missing))
    blocks: list[ContentBlock] = [{"type": "text", "text": "\n".join(lines)}]
    blocks.extend({"type": "tool_reference", "tool_name": tool.name} for tool in matches)
    return blocks


def tool_search(input: ToolSearchInput, context: ToolUseContext) -> list[ContentBlock]:
    """Search the deferred tools of the session's pool."""
    query = input.query.strip()
    if not query:
        raise ToolInputError("The query is empty: give keywords or select:Name1,Name2.")
    deferred = [tool for tool in context.options.tools if is_deferred(tool) and _enabled(tool)]
    found = search_tools(query, deferred, max_results=input.max_results)
    return search_result_content(found.tools, query=query, missing=found.missing)


TOOL = build_tool(
    name=NAME,
    input_model=ToolSearchInput,
    call=tool_search,
    description=DESCRIPTION,
    search_hint=SEARCH_HINT,
    read_only=True,
    concurrency_safe=True,
    render_tool_use=lambda input: input.query,
    extras={SEARCHES_DEFERRED_TOOLS: True},
)


def with_tool_search(tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
    """The pool plus ToolSearch when a deferred tool exists and no finder is there yet."""
    pool = list(tools)
    has_finder = any(tool.extras.get(SEARCHES_DEFERRED_TOOLS) for tool in pool)
    if not has_finder and any(is_deferred(tool) for tool in pool):
        pool.append(TOOL)
    return pool
