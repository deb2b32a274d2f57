"""`McpManager`: the session's MCP servers — connecting them, their tools, status, restart.

`await manager.start()` connects every configured server at once (each within its own
timeout); `manager.tools()` is the current list of MCP tools (``mcp__<server>__<tool>``
plus the two resource tools) to add to the session's pool before each request; a server
that failed simply contributes no tools. Names are unique and schemas valid for the API
(`naming`): a server whose name would make tool names ambiguous (``files_``, ``a__b``) is
renamed for its tools and rules; what was renamed or left out is listed under the server in
`status()`. A call
that finds its server gone, or that times out, raises a `ToolError` the pipeline turns into
a clear `is_error` result, and the session goes on. `status()` is what `%agent mcp` lists.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types

from ..core.tool import Tool
from ..core.types import ToolError
from .config import McpConfigs, McpServerConfig, load_mcp_configs
from .connection import McpCallError, McpConnection, McpUnavailable, ServerState
from .convert import ProgressFn, build_mcp_tool, mcp_tool_name
from .naming import UnmappableSchema, renamed_notice, server_names, tool_names
from .resource_tools import build_resource_tools


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One line of `%agent mcp`: a server, its state, its tool count and its last error."""

    name: str
    state: ServerState | str
    tool_count: int
    error: str | None
    transport: str
    source: str | None
    notices: tuple[str, ...] = ()
    """Tools left out, or renamed for the API, and why."""

    def __str__(self) -> str:
        line = f"{self.name}: {self.state}, {self.tool_count} tools ({self.transport})"
        line = f"{line} — {self.error}" if self.error else line
        return "\n".join([line, *(f"  {notice}" for notice in self.notices)])


class McpManager:
    """The MCP servers of one session."""

    def __init__(
        self,
        configs: Iterable[McpServerConfig] = (),
        *,
        config_errors: Mapping[str, str] | None = None,
    ) -> None:
        self.connections: dict[str, McpConnection] = {}
        self.config_errors: dict[str, str] = dict(config_errors or {})
        for config in configs:
            self.connections[config.name] = McpConnection(config)
        self._tools: dict[str, tuple[tuple[int, str], list[Tool[Any]]]] = {}
        """Built tools by server, with the connection's generation and the server's name in
        tool names (another server added later may change it) they were built for."""
        self._notices: dict[str, tuple[str, ...]] = {}
        self._resource_tools = build_resource_tools(self)

    @classmethod
    def from_settings(
        cls,
        cwd: str | os.PathLike[str],
        *,
        home: str | os.PathLike[str] | None = None,
        trusted: bool = True,
    ) -> McpManager:
        """A manager for the servers in the user and project settings files (the user's
        only, when the folder is not `trusted`)."""
        found: McpConfigs = load_mcp_configs(cwd, home=home, trusted=trusted)
        return cls(found.servers.values(), config_errors=found.errors)

    async def start(self) -> None:
        """Connect every server that is not connected, concurrently; never raises."""
        pending = [c for c in self.connections.values() if c.state != "connected"]
        await asyncio.gather(*(c.start() for c in pending))

    async def add(self, config: McpServerConfig, *, replace: bool = False) -> ServerStatus:
        """Add a server (`%agent mcp add`) and connect it."""
        existing = self.connections.get(config.name)
        if existing is not None:
            if not replace:
                raise ValueError(f"an MCP server named {config.name!r} already exists")
            await existing.stop()
        connection = McpConnection(config)
        self.connections[config.name] = connection
        self.config_errors.pop(config.name, None)
        await connection.start()
        return self._status(connection)

    async def remove(self, name: str) -> None:
        """Disconnect and forget a server."""
        connection = self.connections.pop(name, None)
        self._tools.pop(name, None)
        if connection is not None:
            await connection.stop()

    async def restart(self, name: str) -> ServerStatus:
        """Restart one server (after a crash, or to pick up a new version)."""
        connection = self.connections.get(name)
        if connection is None:
            raise KeyError(f"no MCP server named {name!r}")
        await connection.restart()
        return self._status(connection)

    async def close(self) -> None:
        """Disconnect every server."""
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    def tools(self) -> list[Tool[Any]]:
        """The MCP tools of the connected servers, in a stable order, plus resource tools."""
        result: list[Tool[Any]] = []
        for name in sorted(self.connections):
            connection = self.connections[name]
            if connection.state != "connected":
                continue
            cached = self._tools.get(name)
            key = (connection.generation, self.server_name(name))
            if cached is None or cached[0] != key:
                built = self._build(connection)
                cached = self._tools[name] = (key, built)
            result.extend(cached[1])
        if any(c.state == "connected" and c.has_resources for c in self.connections.values()):
            result.extend(self._resource_tools)
        return result

    def status(self) -> list[ServerStatus]:
        """Every server with its state, tool count and error, then unusable config entries."""
        rows = [self._status(self.connections[name]) for name in sorted(self.connections)]
        rows.extend(
            ServerStatus(name, "invalid config", 0, error, "-", None)
            for name, error in sorted(self.config_errors.items())
        )
        return rows

    def renamed(self) -> list[str]:
        """A notice per server whose name tools and rules use differs from its configured
        one (see `naming.server_names`)."""
        names = server_names(self.connections)
        return [renamed_notice(c, n) for c, n in sorted(names.items()) if c != n]

    def server_name(self, configured: str) -> str:
        """The name tools and rules use for the server configured as `configured`."""
        return server_names([*self.connections, configured])[configured]

    def _status(self, connection: McpConnection) -> ServerStatus:
        config = connection.config
        return ServerStatus(
            name=connection.name,
            state=connection.state,
            tool_count=len(connection.tools) if connection.state == "connected" else 0,
            error=connection.error,
            transport=config.transport,
            source=config.source,
            notices=self._notices.get(connection.name, self._rename_notice(connection.name)),
        )

    def _rename_notice(self, configured: str) -> tuple[str, ...]:
        server = self.server_name(configured)
        return () if server == configured else (renamed_notice(configured, server),)

    def _build(self, connection: McpConnection) -> list[Tool[Any]]:
        """The server's tools under unique valid names; a tool whose schema cannot be made
        valid is left out, and `%agent mcp` says so (see `naming`)."""

        async def call(
            tool: str, arguments: dict[str, Any], /, *, progress: ProgressFn | None = None
        ) -> mcp_types.CallToolResult:
            try:
                return await connection.call_tool(tool, arguments, progress=progress)
            except (McpUnavailable, McpCallError) as exc:
                raise ToolError(str(exc)) from None

        server = self.server_name(connection.name)
        names = tool_names(server, [tool.name for tool in connection.tools])
        built: list[Tool[Any]] = []
        notices: list[str] = []
        if server != connection.name:
            notices.append(renamed_notice(connection.name, server))
        for tool in connection.tools:
            name = names[tool.name]
            try:
                built.append(
                    build_mcp_tool(
                        server,
                        tool,
                        call,
                        always_load=connection.config.always_load,
                        name=name,
                        trust_annotations=connection.config.trust_annotations,
                        configured_server=connection.name,
                    )
                )
            except UnmappableSchema as exc:
                notices.append(f"{tool.name!r} left out: {exc}")
                continue
            if name != mcp_tool_name(server, tool.name):
                notices.append(f"{tool.name!r} is {name} (its plain name is taken)")
        self._notices[connection.name] = tuple(notices)
        return built
