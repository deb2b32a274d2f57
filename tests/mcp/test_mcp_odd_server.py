"""An MCP server whose names and schemas the API would refuse, end to end.

`mcp_servers/odd_server.py` (a real process over stdio) lists ``files.read`` and
``files_read``, property keys ``"file path"``, ``"ns:key"`` and a nested ``"a b"``, a schema
whose bad key sits under ``$defs``, and images the API would refuse. A real Session sends
its tools through the real `anthropic` client to the loopback server, which checks every
request against the SDK's types and the API's limits: the conversation goes on, the calls
reach the server under its own names and keys, and `%agent mcp` tells what was changed.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost import Session
from jupyter_toolhost.core.images import VISION_LONG_EDGE
from jupyter_toolhost.mcp import McpManager, McpServerConfig
from jupyter_toolhost.mcp.naming import tool_names
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

ODD = str(Path(__file__).parents[1] / "mcp_servers" / "odd_server.py")


def test_names_are_unique_stable_and_readable() -> None:
    first = tool_names("odd", ["files.read", "files_read", "lookup"])
    again = tool_names("odd", ["lookup", "files_read", "files.read"])
    assert first == again
    assert first["files_read"] == "mcp__odd__files_read"
    assert first["files.read"] == "mcp__odd__files_read_601e"  # as the docs show it
    assert len(set(first.values())) == 3
    # Two names that both need changing get a suffix each, still distinct.
    both = tool_names("odd", ["a.b", "a:b"])
    assert len(set(both.values())) == 2 and all(
        n.startswith("mcp__odd__a_b_") for n in both.values()
    )
    # Names cut at the API's 128 characters stay unique too.
    long = tool_names("odd", ["x" * 200 + "1", "x" * 200 + "2"])
    assert len(set(long.values())) == 2 and all(len(n) <= 128 for n in long.values())


@pytest.mark.timeout(120)
async def test_odd_server_works_end_to_end(tmp_path: Path) -> None:
    config = McpServerConfig.stdio("odd", sys.executable, ODD, always_load=True)
    manager = McpManager([config])
    await manager.start()
    names = {t.extras["mcp_tool"]: t.name for t in manager.tools() if t.is_mcp}
    assert "tangled" not in names
    dotted = names["files.read"]
    assert dotted != names["files_read"] == "mcp__odd__files_read"

    script = [
        Turn(
            [
                tool_use(dotted, {"path": "a.txt"}),
                tool_use("mcp__odd__files_read", {"path": "b.txt"}),
                tool_use(
                    "mcp__odd__lookup",
                    {"file_path": "data.csv", "ns_key": "v", "rows": [{"a_b": 1}, {"a_b": 2}]},
                ),
                tool_use("mcp__odd__bitmap", {}),
                tool_use("mcp__odd__banner", {}),
            ]
        ),
        Turn([text("all done")]),
    ]
    with MessagesServer(script) as server:
        session = Session(
            tools=[],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id="claude-test",
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            mcp=manager,
        )
        try:
            assert await session.run("Use the odd server.") == "all done"
        finally:
            await session.close()
    assert server.errors == [], server.errors

    first = server.requests[0].body
    sent = {tool["name"]: tool for tool in first["tools"]}
    assert len(sent) == len(first["tools"])
    lookup = sent["mcp__odd__lookup"]["input_schema"]
    assert sorted(lookup["properties"]) == ["file_path", "ns_key", "rows"]
    assert lookup["required"] == ["file_path"]
    assert '"file path"' in lookup["properties"]["file_path"]["description"]
    assert list(lookup["properties"]["rows"]["items"]["properties"]) == ["a_b"]

    results = server.requests[-1].body["messages"][-1]["content"]
    texts = [_text(block) for block in results[:3]]
    assert texts[0] == 'files.read got {"path": "a.txt"}'
    assert texts[1] == 'files_read got {"path": "b.txt"}'
    assert json.loads(texts[2].removeprefix("lookup got ")) == {
        "file path": "data.csv",
        "ns:key": "v",
        "rows": [{"a b": 1}, {"a b": 2}],
    }
    bitmap, banner = (_image(block) for block in results[3:5])
    assert bitmap.format == "PNG" and bitmap.size == (30, 20)
    assert banner.size[0] == VISION_LONG_EDGE

    status = "\n".join(str(row) for row in manager.status())
    assert "'tangled' left out" in status and "$defs" in status
    assert f"'files.read' is {dotted}" in status


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    assert not result.get("is_error"), content
    return content if isinstance(content, str) else content[0]["text"]


def _image(result: dict[str, Any]) -> Any:
    from PIL import Image

    [block] = [b for b in result["content"] if b["type"] == "image"]
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))
