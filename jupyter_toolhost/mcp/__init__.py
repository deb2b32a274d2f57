"""MCP servers through the official `mcp` SDK: their tools become `mcp__<server>__<tool>`.

- `config`: the `mcpServers` settings (stdio and streamable HTTP).
- `connection`: one live server — start, calls, crash detection, restart.
- `convert`: MCP tool definitions → `Tool`s; MCP results → tool_result content.
- `resource_tools`: `ListMcpResources` / `ReadMcpResource`.
- `manager`: all servers of a session, their tools and status (`%agent mcp`).
"""

from __future__ import annotations

from .config import (
    McpConfigError,
    McpConfigs,
    McpServerConfig,
    load_mcp_configs,
    parse_server_config,
)
from .connection import McpCallError, McpConnection, McpUnavailable
from .convert import McpToolInput, build_mcp_tool, convert_result, mcp_tool_name
from .manager import McpManager, ServerStatus

__all__ = [
    "McpCallError",
    "McpConfigError",
    "McpConfigs",
    "McpConnection",
    "McpManager",
    "McpServerConfig",
    "McpToolInput",
    "McpUnavailable",
    "ServerStatus",
    "build_mcp_tool",
    "convert_result",
    "load_mcp_configs",
    "mcp_tool_name",
    "parse_server_config",
]
