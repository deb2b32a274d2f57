"""ToolSearch: finds deferred tools and loads them by answering with `tool_reference` blocks.

The tool reads the whole pool from `context.options.tools`, searches the deferred tools
among them (`disclosure.search`), and returns one ``{"type": "tool_reference"}`` block per
match (a `select:` name that does not exist is left out; if none is found, a text says
so). The loop's next request then carries those tools
(`disclosure.tools_for_request` finds the references in the history). It is never
deferred, read-only and safe to run beside other calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ContentBlock, ToolInputError
from ...disclosure import SEARCHES_DEFERRED_TOOLS, is_deferred, search_tools, with_finder
from ...disclosure.semantic import semantic_ranker
from .prompt import DESCRIPTION, NAME, SEARCH_HINT

DEFAULT_MAX_RESULTS = 5


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


def search_result_content(
    matches: Sequence[Tool[Any]], *, query: str, missing: Sequence[str] = ()
) -> list[ContentBlock]:
    """ToolSearch's tool_result content: one `tool_reference` block per match and nothing
    else (as Claude Code answers; the API expands each into the tool's definition, so a
    summary would only repeat it), or, when nothing matched, a text saying so."""
    if matches:
        return [{"type": "tool_reference", "tool_name": tool.name} for tool in matches]
    lines = [f"No deferred tools match {query!r}."]
    if missing:
        lines.append("Not found: " + ", ".join(missing))
    return [{"type": "text", "text": "\n".join(lines)}]


def tool_search(input: ToolSearchInput, context: ToolUseContext) -> list[ContentBlock]:
    """Search the deferred tools of the session's pool."""
    query = input.query.strip()
    if not query:
        raise ToolInputError("The query is empty: give keywords or select:Name1,Name2.")
    deferred = [tool for tool in context.options.tools if is_deferred(tool) and _enabled(tool)]
    found = search_tools(query, deferred, max_results=input.max_results, ranker=semantic_ranker())
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
    return with_finder(tools, TOOL)
