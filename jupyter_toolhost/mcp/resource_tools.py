"""`ListMcpResources` and `ReadMcpResource`: the tools that reach MCP servers' resources.

Both are built by an `McpManager` for its servers, read-only and safe to run together,
deferred like other MCP tools, and enabled only while a connected server offers resources.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..core.context import ToolUseContext
from ..core.tool import Tool, build_tool
from ..core.types import ContentBlock, ToolInputError
from .connection import McpConnection, McpUnavailable
from .convert import resource_block


class McpServers(Protocol):
    """The servers the resource tools read (an `McpManager`'s): the manager builds these
    tools, so they see it through this protocol instead of importing it back."""

    @property
    def connections(self) -> Mapping[str, McpConnection]: ...


LIST_NAME = "ListMcpResources"
READ_NAME = "ReadMcpResource"

LIST_DESCRIPTION = """List the resources (files, documents, records) that connected MCP \
servers offer, with their URIs, names and types. Give `server` to list one server only."""

READ_DESCRIPTION = """Read one resource of an MCP server by its URI (as listed by \
ListMcpResources)."""


class ListMcpResourcesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str | None = Field(default=None, description="Only this server's resources.")


class ReadMcpResourceInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str = Field(description="The MCP server that offers the resource.")
    uri: str = Field(description="The resource URI.")


def _pick(manager: McpServers, name: str) -> McpConnection:
    connection = manager.connections.get(name)
    if connection is None:
        known = ", ".join(sorted(manager.connections)) or "(none)"
        raise ToolInputError(f"No MCP server named {name!r}. Servers: {known}")
    return connection


def build_resource_tools(manager: McpServers) -> list[Tool[Any]]:
    """The two resource tools, bound to a manager's servers."""

    def any_resources() -> bool:
        return any(c.state == "connected" and c.has_resources for c in manager.connections.values())

    async def list_resources(input: ListMcpResourcesInput, _context: ToolUseContext) -> str:
        if input.server is not None:
            targets = [_pick(manager, input.server)]
        else:
            targets = [
                c
                for c in manager.connections.values()
                if c.state == "connected" and c.has_resources
            ]
        listing: list[dict[str, Any]] = []
        problems: list[str] = []
        for connection in targets:
            try:
                resources = await connection.list_resources()
            except McpUnavailable as exc:
                problems.append(str(exc))
                continue
            for resource in resources:
                entry = {"server": connection.name, "uri": str(resource.uri), "name": resource.name}
                if resource.mime_type:
                    entry["mimeType"] = resource.mime_type
                if resource.description:
                    entry["description"] = resource.description
                listing.append(entry)
        text = json.dumps(listing, ensure_ascii=False, indent=2) if listing else "No resources."
        return "\n".join([text, *problems])

    async def read_resource(
        input: ReadMcpResourceInput, _context: ToolUseContext
    ) -> list[ContentBlock]:
        connection = _pick(manager, input.server)
        result = await connection.read_resource(input.uri)
        return [resource_block(item) for item in result.contents] or [
            {"type": "text", "text": f"[resource {input.uri} is empty]"}
        ]

    common: dict[str, Any] = {
        "read_only": True,
        "concurrency_safe": True,
        "should_defer": True,
        "is_enabled": any_resources,
        "is_mcp": True,
    }
    return [
        build_tool(
            name=LIST_NAME,
            input_model=ListMcpResourcesInput,
            call=list_resources,
            description=LIST_DESCRIPTION,
            search_hint="mcp resources list documents files uri",
            **common,
        ),
        build_tool(
            name=READ_NAME,
            input_model=ReadMcpResourceInput,
            call=read_resource,
            description=READ_DESCRIPTION,
            search_hint="mcp resource read open document uri",
            **common,
        ),
    ]
