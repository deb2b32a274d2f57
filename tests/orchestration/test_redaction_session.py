"""Every tool result is redacted in one place: a whole `Session` on the loopback Messages
API, with tools of every kind that hand back a secret.

The key is given to the model in code (so it is in no environment variable), a label and
value come in through `Session(secrets=...)`, and the tools are a plain function tool, one
that returns blocks with an image, one that shows displays and reports progress lines, an
MCP server's tool, and a subagent's tool. What the server received, the events the cell
draws from and the files under `.toolhost` must hold markers; the image bytes must be
untouched. The keys are fakes made for these tests.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import MODEL, Router, last_results, result_text

from jupyter_toolhost import Session
from jupyter_toolhost.core.context import Progress, ToolUseContext
from jupyter_toolhost.core.tool import Tool, ToolOutput, build_tool
from jupyter_toolhost.mcp import McpManager, McpServerConfig
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.orchestration.events import CallFinished, CallProgress
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent

pytestmark = pytest.mark.timeout(120)

CODE_KEY = "sk-ant-api03-GIVEN-IN-CODE-FAKE-FOR-TESTS-7f3e9a1b2c4d6e8f0a1b3c5d7e9f"
"""The model's key, given to `AnthropicModel` in code: in no environment variable."""
SERVICE = "service-password-fake-for-tests-2718281828"
GITHUB = "ghp_FAKEtokenFORtestsONLY0123456789abcdef"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_with_token_shapes() -> str:
    """A 2x2 PNG, in base64, whose text chunk is placed (at a byte offset that is a
    multiple of 3) so that the base64 holds a Google-key-shaped run ("AIza" and 35 more)
    and a JWT's start: inside base64 they are not tokens, and must not be touched."""
    header = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
    assert len(header) % 3 == 0
    shaped = base64.b64decode("AIza" + "B" * 35 + "A" + "eyJhbGciOiJIUzI1")
    rows = b"".join(b"\x00" + b"\xc8\x0a\x0a" * 2 for _ in range(2))
    png = (
        header
        + _chunk(b"tEXt", b"key\x00" + shaped)
        + _chunk(b"IDAT", zlib.compress(rows))
        + _chunk(b"IEND", b"")
    )
    encoded = base64.b64encode(png).decode()
    assert "AIza" + "B" * 35 in encoded
    return encoded


PNG = _png_with_token_shapes()


class Empty(BaseModel):
    pass


def _tools() -> list[Tool[Any]]:
    def leak(input: Empty, context: ToolUseContext) -> str:
        sha = "9f86d081884c7d659a2feaa0c55ad015"
        return f"key={CODE_KEY} service={SERVICE}\ntoken: {GITHUB}\nsha={sha}"

    def picture(input: Empty, context: ToolUseContext) -> Any:
        return [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "text", "text": f"made with {CODE_KEY}"},
        ]

    def shows(input: Empty, context: ToolUseContext) -> ToolOutput:
        assert context.progress is not None
        context.progress(Progress(text=f"using {SERVICE}", tail=(f"line {GITHUB}",)))
        html = {"text/html": f"<b>{CODE_KEY}</b>", "text/plain": SERVICE, "image/png": PNG}
        return ToolOutput(data="shown", displays=({"data": html, "metadata": {}},))

    return [
        build_tool(name="Leak", input_model=Empty, call=leak, description="Leaks."),
        build_tool(name="Picture", input_model=Empty, call=picture, description="A picture."),
        build_tool(name="Shows", input_model=Empty, call=shows, description="Shows things."),
    ]


def _mcp_server(folder: Path) -> McpServerConfig:
    script = folder / "leaky_server.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from mcp.server.mcpserver import MCPServer
            from mcp.types import EmbeddedResource, TextResourceContents
            server = MCPServer("leaky")

            @server.tool(description="Return a secret as text.")
            def secret() -> str:
                return "the password is {SERVICE} and the key {CODE_KEY}"

            @server.tool(description="Return a secret as a resource.")
            def document() -> EmbeddedResource:
                contents = TextResourceContents(uri="file:///secret.txt", text="{GITHUB}")
                return EmbeddedResource(type="resource", resource=contents)

            server.run()
            """
        )
    )
    return McpServerConfig.stdio("leaky", sys.executable, str(script))


def _no_secret(where: str, found: str) -> None:
    for secret in (CODE_KEY, SERVICE, GITHUB):
        assert secret not in found, f"a secret reached {where}"
        assert secret[:20] not in found and secret[-20:] not in found, where


async def test_every_kind_of_result_is_redacted(tmp_path: Path) -> None:
    events: list[Any] = []
    router = Router(
        {
            "MAIN": [
                Turn(
                    [
                        tool_use("Leak", {}),
                        tool_use("Picture", {}),
                        tool_use("Shows", {}),
                        tool_use("mcp__leaky__secret", {}),
                        tool_use("mcp__leaky__document", {}),
                        tool_use("Agent", {"description": "look", "prompt": "SUB: leak it"}),
                    ]
                ),
                Turn([text("Done.")]),
            ],
            "SUB": [Turn([tool_use("Leak", {})]), Turn([text("The sub saw a marker.")])],
        }
    )
    manager = McpManager([_mcp_server(tmp_path)])
    try:
        with MessagesServer(router) as server:
            session = Session(
                tools=[*_tools(), agent.make_tool()],
                model=AnthropicModel(base_url=server.base_url, api_key=CODE_KEY),
                model_id=MODEL,
                cwd=tmp_path,
                permission_mode="bypassPermissions",
                retry_backoff_s=0.01,
                secrets={"service password": SERVICE},
                mcp=manager,
                on_event=events.append,
            )
            await session.run("MAIN: use every tool")
    finally:
        await manager.close()

    assert server.errors == []
    [*_, after] = router.seen["MAIN"]
    results = {r["tool_use_id"]: r for r in last_results(after)}
    texts = [result_text(r) for r in results.values()]
    joined = "\n".join(texts)
    assert "key=[redacted: ANTHROPIC_API_KEY] service=[redacted: service password]" in joined
    assert "token: [redacted: GitHub token]" in joined
    assert "sha=9f86d081884c7d659a2feaa0c55ad015" in joined, "a hash is not a secret"
    assert "the password is [redacted: service password]" in joined
    assert "The sub saw a marker." in joined
    images = [
        b
        for r in results.values()
        if isinstance(r["content"], list)
        for b in r["content"]
        if b.get("type") == "image"
    ]
    assert [i["source"]["data"] for i in images] == [PNG], "the image bytes are untouched"
    for body in [*router.seen["MAIN"], *router.seen["SUB"]]:
        _no_secret("a request", json.dumps(body))
    [sub_after] = router.seen["SUB"][1:]
    assert "[redacted: ANTHROPIC_API_KEY]" in result_text(last_results(sub_after)[0])

    finished = [e.result for e in _flat(events) if isinstance(e, CallFinished)]
    shown = [d for r in finished for d in r.displays]
    assert shown and shown[0]["data"]["image/png"] == PNG
    assert shown[0]["data"]["text/html"] == "<b>[redacted: ANTHROPIC_API_KEY]</b>"
    _no_secret("the cell's displays", json.dumps(shown))
    progress = [e for e in _flat(events) if isinstance(e, CallProgress)]
    assert any("[redacted: GitHub token]" in " ".join(e.tail) for e in progress)
    _no_secret("the live lines", json.dumps([(e.text, e.tail) for e in progress]))
    for path in (tmp_path / ".toolhost").rglob("*"):
        if path.is_file():
            _no_secret(str(path), path.read_text(errors="replace"))


def _flat(events: list[Any]) -> list[Any]:
    """The events, with those of subagents' calls unwrapped."""
    found: list[Any] = []
    for event in events:
        found.append(event)
        inner = getattr(event, "event", None)
        if inner is not None:
            found += _flat([inner])
    return found
