"""What the model is told about ToolSearch."""

from __future__ import annotations

NAME = "ToolSearch"

DESCRIPTION = """Find and load deferred tools. Some tools (often those of MCP servers) are not \
loaded at the start: only their names are listed in a <system-reminder>. Until a tool is \
loaded you cannot call it. ToolSearch finds the tools that fit a query and loads them, so \
they can be called from your next turn on.

Query forms:
- Keywords describing the task, e.g. "did the nightly build pass" or "send chat message". \
Returns up to max_results tools, best match first.
- "select:Name1,Name2" loads exactly the named tools (use it when you know the names from \
the list).
- "+word" requires a word in the tool's name, e.g. "+forge issue".

Search once for everything you are about to need rather than one tool at a time."""

SEARCH_HINT = "find load discover deferred tools mcp"
