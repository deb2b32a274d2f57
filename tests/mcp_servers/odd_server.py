"""An MCP server whose names and schemas the Messages API would refuse as they are (stdio).

Written with the `mcp` SDK's low-level `Server`, because its high-level one cannot declare
such schemas. Tools:
- ``files.read`` and ``files_read``: one name after the API's characters are applied;
- ``lookup``: property keys ``"file path"``, ``"ns:key"`` and a nested ``"a b"`` inside an
  array of objects; it echoes the arguments it got, keys as the server named them;
- ``tangled``: a bad key under ``$defs``, which no call can be mapped back through;
- ``bitmap``: a BMP image declared ``image/png``; ``banner``: a 9000-px-wide PNG.

Run: ``python odd_server.py``.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="files.read",
        description="Read a file (dotted name).",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    types.Tool(
        name="files_read",
        description="Read a file (underscored name).",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    types.Tool(
        name="lookup",
        description="Echo the arguments back, keys as this server names them.",
        input_schema={
            "type": "object",
            "properties": {
                "file path": {"type": "string", "description": "Where to look."},
                "ns:key": {"type": "string"},
                "rows": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a b": {"type": "integer"}}},
                },
            },
            "required": ["file path"],
        },
    ),
    types.Tool(
        name="tangled",
        description="A schema whose bad key cannot be mapped back.",
        input_schema={
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/item"}},
            "$defs": {"item": {"type": "object", "properties": {"x y": {"type": "string"}}}},
        },
    ),
    types.Tool(name="bitmap", description="A BMP image.", input_schema={"type": "object"}),
    types.Tool(name="banner", description="A very wide PNG.", input_schema={"type": "object"}),
]


def _image(fmt: str, size: tuple[int, int]) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, "purple").save(buffer, format=fmt)
    return base64.b64encode(buffer.getvalue()).decode()


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "bitmap":
        content: list[Any] = [
            types.ImageContent(data=_image("BMP", (30, 20)), mime_type="image/png")
        ]
    elif params.name == "banner":
        content = [types.ImageContent(data=_image("PNG", (9000, 60)), mime_type="image/png")]
    else:
        text = f"{params.name} got {json.dumps(arguments, sort_keys=True)}"
        content = [types.TextContent(text=text)]
    return types.CallToolResult(content=content)


server = Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
