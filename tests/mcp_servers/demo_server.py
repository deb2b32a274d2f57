"""A small MCP server for the tests, written with the official `mcp` SDK; runs over stdio.

Tools cover each result kind the client converts (text, image, embedded resource, an
`isError` result), annotations, a slow tool for timeouts, and one that kills its own process
on purpose to test crash handling. Run: ``python demo_server.py [--tool-prefix X]``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextResourceContents, ToolAnnotations

# A 1x1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("demo", instructions="A demo server for jupyter_toolhost tests.")


@server.tool(
    description="Add two integers and return the sum as text.",
    annotations=ToolAnnotations(read_only_hint=True),
)
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(
    description="Remove every stored note. Cannot be undone.",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
)
def wipe_notes() -> str:
    return "all notes removed"


@server.tool(
    description="Return the given text unchanged (what a server that relays a web page does).",
    annotations=ToolAnnotations(read_only_hint=True),
)
def echo(text: str) -> str:
    return text


@server.tool(description="Return a tiny PNG image.")
def pixel() -> Image:
    return Image(data=PIXEL_PNG, format="png")


@server.tool(description="Return a text document as an embedded resource.")
def readme() -> EmbeddedResource:
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(
            uri="demo://readme", mime_type="text/plain", text="Hello docs"
        ),
    )


@server.tool(description="Always fails with a message the caller can act on.")
def refuse(reason: str) -> str:
    raise ToolError(f"refused: {reason}")


@server.tool(description="Sleep for the given number of seconds, then answer.")
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


@server.tool(description="Kill this server process on purpose (for crash tests).")
def crash() -> str:
    sys.stderr.flush()
    os._exit(3)


@server.tool(description="The process id of this server (to tell restarts apart).")
def whoami() -> str:
    return str(os.getpid())


@server.resource(
    "demo://greeting", name="greeting", description="A friendly greeting", mime_type="text/plain"
)
def greeting() -> str:
    return "hello from the demo server"


if __name__ == "__main__":
    server.run("stdio")
