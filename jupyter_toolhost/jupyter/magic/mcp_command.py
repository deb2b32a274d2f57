"""`%agent mcp`: list the session's MCP servers, add a stdio server, restart, remove.

Listing reads `session.mcp.status()`; add, restart and remove await the server, so they
run as a cell of their own (the input transformer makes such a cell one `await`, like
`%agent compact`). A server added here joins the running session: its tools are offered
from the next request on (deferred: the model finds them with ToolSearch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...mcp import McpConfigError, McpServerConfig
from ..agent import ensure_mcp
from ..views.render import Rendered, notice_display, table_display
from .options import MCP_USAGE, Command, UsageError

if TYPE_CHECKING:
    from ..host import AgentHost

NONE_CONFIGURED = (
    "No MCP servers are configured. Add one to this session with\n"
    "    %agent mcp add NAME -- COMMAND ARGS...\n"
    'or for every session in "mcpServers" of .toolhost/settings.json.'
)


def list_servers(host: AgentHost) -> Rendered:
    """The servers with their state, tool count and last error, and notes: a server renamed
    for its tool names and rules (with what rules must say), tools left out or renamed."""
    manager = host.session.mcp if host.session is not None else None
    statuses = manager.status() if manager is not None else []
    if not statuses:
        return notice_display(NONE_CONFIGURED)
    rows = [
        (s.name, s.state, s.tool_count, s.transport, s.error or "", "\n".join(s.notices))
        for s in statuses
    ]
    columns = ("server", "state", "tools", "transport", "error", "notes")
    return table_display("mcp", columns, rows, title="MCP servers")


async def run_mcp(host: AgentHost, command: Command) -> Rendered:
    """Run one `%agent mcp` action."""

    action = command.argument or "list"
    if action == "list":
        return list_servers(host)

    name = command.words[0]
    if action == "add":
        session = host.ensure_session()
        manager = ensure_mcp(session)
        try:
            config = McpServerConfig.stdio(name, *command.words[1:])
            status = await manager.add(config)
        except (McpConfigError, ValueError) as exc:
            raise UsageError(f"Could not add MCP server {name!r}: {exc}") from None
        return _outcome(f"Added MCP server {status}.", status.state)
    manager = host.session.mcp if host.session is not None else None
    if manager is None or name not in manager.connections:
        raise UsageError(f"No MCP server named {name!r}.\n{MCP_USAGE}")
    if action == "restart":
        status = await manager.restart(name)
        return _outcome(f"Restarted MCP server {status}.", status.state)
    await manager.remove(name)
    return notice_display(f"Removed MCP server {name}; its tools are no longer offered.")


def _outcome(text: str, state: str) -> Rendered:
    if state == "connected":
        return notice_display(text + " Its tools are offered from the next request on.")
    return notice_display(text, level="warning")
