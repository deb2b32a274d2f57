"""WebSearch's backend on the Messages API's server-side web search tool.

One small request carries the server tool (`web_search_20250305`); the API runs the searches
and answers with `web_search_tool_result` blocks (title, URL) and text that cites them. The
results and that text become WebSearch's result. An endpoint without the server tool answers
with an error, which reaches the model as a clear `is_error` result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.json_values import json_array, json_mapping
from ..core.types import ToolError
from .base import BlockComplete, Model, ModelError, ModelRequest

SERVER_TOOL = "web_search_20250305"


class ServerWebSearch:
    """`backend(query, allowed_domains, blocked_domains)` for the WebSearch tool."""

    def __init__(self, *, model: Model, model_id: str, max_uses: int = 3) -> None:
        self.model = model
        self.model_id = model_id
        self.max_uses = max_uses

    async def __call__(
        self, query: str, allowed: Sequence[str] | None, blocked: Sequence[str] | None
    ) -> list[dict[str, Any]]:
        tool: dict[str, Any] = {
            "type": SERVER_TOOL,
            "name": "web_search",
            "max_uses": self.max_uses,
        }
        if allowed:
            tool["allowed_domains"] = list(allowed)
        if blocked:
            tool["blocked_domains"] = list(blocked)
        request = ModelRequest(
            model=self.model_id,
            messages=[{"role": "user", "content": [{"type": "text", "text": _ask(query)}]}],
            max_tokens=1024,
            tools=[tool],
        )
        blocks: list[Mapping[str, Any]] = []
        try:
            async for event in self.model.stream(request):
                if isinstance(event, BlockComplete):
                    blocks.append(event.block)
        except ModelError as exc:
            raise ToolError(f"The web search backend failed: {exc}") from None
        return results_of(blocks)


def _ask(query: str) -> str:
    return f"Search the web for: {query}\nThen summarise what the results say, briefly."


def results_of(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Search results (title, url) from the response, then the model's summary of them."""
    results: list[dict[str, Any]] = []
    summary: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "web_search_tool_result":
            content = block.get("content")
            failure = json_mapping(content)
            if failure is not None:  # an error object instead of results
                raise ToolError(f"Web search failed: {failure.get('error_code', 'unknown error')}")
            for entry in json_array(content) or []:
                item = json_mapping(entry)
                if item is not None and item.get("type") == "web_search_result":
                    results.append({"title": item.get("title", ""), "url": item.get("url", "")})
        elif kind == "text" and str(block.get("text", "")).strip():
            summary.append(str(block["text"]).strip())
    if summary:
        results.append({"title": "Summary of the results", "url": "", "snippet": " ".join(summary)})
    return results
