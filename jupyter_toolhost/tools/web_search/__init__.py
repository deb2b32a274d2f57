"""WebSearch: web search through a configured backend; disabled until one is configured.

A backend is a callable ``backend(query, allowed_domains, blocked_domains)`` returning
(or awaiting to) a list of results, each a mapping with ``title``, ``url`` and optionally
``snippet``. The model layer can provide one built on the Anthropic server-side web search
tool (this package never imports `anthropic`). Configure it for the process with
`configure(backend)`, or per tool with `make_tool(backend=...)`; `is_enabled()` is false
until then, so the model is not offered a tool that cannot work.

`make_tool(backend=FROM_SESSION)` is for hosts that build the tool pool before the session
(the notebook): each call uses the backend of the session running it, which a `Session` on
a Messages API client puts in ``context.options.web_search``. Such a tool is
offered, and a call in a session without a backend fails with a clear error.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError
from .prompt import DESCRIPTION, NAME

SearchBackend = Callable[
    [str, Sequence[str] | None, Sequence[str] | None],
    "Sequence[Mapping[str, Any]] | Awaitable[Sequence[Mapping[str, Any]]]",
]

_configured: list[SearchBackend] = []


class _FromSession:
    def __repr__(self) -> str:
        return "FROM_SESSION"


FROM_SESSION: Any = _FromSession()
"""`make_tool(backend=FROM_SESSION)`: search with the running session's backend."""


def configure(backend: SearchBackend | None) -> None:
    """Set (or with None, clear) the process-wide search backend."""
    _configured.clear()
    if backend is not None:
        _configured.append(backend)


class WebSearchInput(BaseModel):
    """Input of WebSearch."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=2, description="The search query.")
    allowed_domains: list[str] | None = Field(
        default=None, description="Only results from these domains."
    )
    blocked_domains: list[str] | None = Field(
        default=None, description="No results from these domains."
    )


def format_results(query: str, results: Sequence[Mapping[str, Any]]) -> str:
    """Numbered results: title, URL, snippet."""
    if not results:
        return f'No web results for "{query}".'
    lines = [f'Web search results for "{query}":', ""]
    for number, result in enumerate(results, start=1):
        lines.append(f"{number}. {result.get('title', '(untitled)')}\n   {result.get('url', '')}")
        snippet = str(result.get("snippet") or "").strip()
        if snippet:
            lines.append(f"   {snippet}")
    return "\n".join(lines)


def make_tool(*, backend: SearchBackend | None = None) -> Tool[WebSearchInput]:
    """A fresh WebSearch tool using `backend` (`FROM_SESSION`: the running session's), or
    the one set with `configure()`."""
    from_session = backend is FROM_SESSION
    fixed = None if from_session else backend

    def current() -> SearchBackend | None:
        return fixed or (_configured[0] if _configured else None)

    async def search(input: WebSearchInput, context: ToolUseContext) -> str:
        chosen: SearchBackend | None = context.options.web_search if from_session else None
        chosen = chosen or current()
        if chosen is None and from_session:
            raise ToolError(
                "This session's model has no web search (that needs the Anthropic Messages "
                "API client, or a cassette of it), so WebSearch cannot run."
            )
        if chosen is None:
            raise ToolError(
                "No search backend is configured, so WebSearch cannot run. Configure one with "
                "jupyter_toolhost.tools.web_search.configure(backend)."
            )
        found = chosen(input.query, input.allowed_domains, input.blocked_domains)
        if inspect.isawaitable(found):
            found = await found
        return format_results(input.query, list(found))

    return build_tool(
        name=NAME,
        input_model=WebSearchInput,
        call=search,
        description=DESCRIPTION,
        is_enabled=lambda: from_session or current() is not None,
        read_only=True,
        concurrency_safe=True,
        render_tool_use=lambda input: input.query,
        search_hint="web search internet query results news",
    )


TOOL = make_tool()
