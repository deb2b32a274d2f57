"""Both disclosure styles through `%%agent` in a real kernel: a real MCP server process
(from the project's settings) offers deferred tools, the model (the `anthropic` client
against the loopback Messages API) finds one with ToolSearch and calls it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kernel_helpers import Kernel, demo_mcp_kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.testing.api_view import cached_prefix, visible_tool_names

pytestmark = pytest.mark.timeout(120)

ADD = "mcp__demo__add"


def script() -> list[Turn]:
    return [
        Turn([tool_use("ToolSearch", {"query": f"select:{ADD}"})]),
        Turn([tool_use(ADD, {"a": 2, "b": 3})]),
        Turn([text("2 + 3 = 5")]),
    ]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, server: MessagesServer) -> Iterator[Kernel]:
    kernel = demo_mcp_kernel(tmp_path_factory.mktemp("disclosure"), server.base_url)
    try:
        yield kernel
    finally:
        kernel.close()


def run_cell(kernel: Kernel, server: MessagesServer, line: str) -> list[dict[str, Any]]:
    """Run one `%%agent` conversation; returns the request bodies it sent."""
    start = len(server.requests)
    server.add_turns(*script())
    run = kernel.run(f"%%agent --new --mode bypassPermissions {line}\nAdd 2 and 3.", timeout=90)
    assert run.status == "ok", run.text()
    assert "2 + 3 = 5" in run.text()
    assert server.errors == []
    return [r.body for r in server.requests[start:] if r.path == "/v1/messages"]


def test_agent_cell_uses_defer_loading_by_default(kernel: Kernel, server: MessagesServer):
    before, after, last = run_cell(kernel, server, "")
    deferred = [t for t in after["tools"] if t["name"].startswith("mcp__demo__")]
    assert deferred and all(t["defer_loading"] is True for t in deferred)
    assert ADD not in visible_tool_names(before) and ADD in visible_tool_names(after)
    assert cached_prefix(before) == cached_prefix(after) == cached_prefix(last)
    [result] = [b for b in last["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert "5" in json.dumps(result["content"]) and not result.get("is_error")


def test_agent_cell_disclosure_discovered(kernel: Kernel, server: MessagesServer):
    before, after, _ = run_cell(kernel, server, "--disclosure discovered")
    assert not any("defer_loading" in t for t in before["tools"] + after["tools"])
    assert ADD not in [t["name"] for t in before["tools"]]
    assert ADD in [t["name"] for t in after["tools"]]
    status = kernel.run("%%agent --disclosure lazy\nhi")
    assert status.status == "error" and "Unknown disclosure 'lazy'" in status.text()
