"""`%agent request [N]` in a real kernel: a real MCP server (from the project's settings)
offers deferred tools, the model (the `anthropic` client against the loopback Messages API)
finds one with ToolSearch and calls it, and the view of each turn is checked against the
request the server actually received and the usage it answered with."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, demo_mcp_kernel

from jupyter_toolhost.testing import MessagesServer, RecordedRequest, Turn, text, tool_use
from jupyter_toolhost.testing.api_view import billed_bytes

pytestmark = pytest.mark.timeout(120)

ADD = "mcp__demo__add"
SCRIPT = [
    Turn([tool_use("ToolSearch", {"query": f"select:{ADD}"})], cache_creation_input_tokens=1234),
    Turn(
        [tool_use(ADD, {"a": 2, "b": 3})],
        cache_read_input_tokens=2345,
        cache_creation_input_tokens=56,
    ),
    Turn([text("2 + 3 = 5")], cache_read_input_tokens=3456),
]
COUNT_PATH = "/v1/messages/count_tokens"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, server: MessagesServer) -> Iterator[Kernel]:
    kernel = demo_mcp_kernel(tmp_path_factory.mktemp("request"), server.base_url)
    try:
        yield kernel
    finally:
        kernel.close()


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def summaries(html_text: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", s) for s in re.findall(r"<summary[^>]*>(.*?)</summary>", html_text)
    ]


def view(kernel: Kernel, line: str) -> tuple[str, str]:
    run: CellRun = kernel.run(line)
    assert run.status == "ok", run.text()
    [html_text] = run.displays("text/html")
    [plain] = run.displays("text/plain")
    return html_text, plain


def test_request_view_shows_what_each_turn_sent(kernel: Kernel, server: MessagesServer) -> None:
    before_cell = kernel.run("%agent request")
    assert "No session yet" in before_cell.text()

    start = len(server.requests)
    server.add_turns(*SCRIPT)
    run = kernel.run("%%agent --mode bypassPermissions\nAdd 2 and 3.", timeout=90)
    assert run.status == "ok", run.text()
    assert "2 + 3 = 5" in run.text() and server.errors == []
    sent: list[RecordedRequest] = [r for r in server.requests[start:] if r.path == "/v1/messages"]
    assert len(sent) == 3

    for line, turn in (("%agent request", 3), ("%agent request 1", 1)):
        counting_from = len(server.requests)
        html_text, plain = view(kernel, line)
        body, script = sent[turn - 1].body, SCRIPT[turn - 1]
        parts = summaries(html_text)
        assert f"Request of turn {turn}" in html_text and "<script" not in html_text

        # Bytes of each part, as the client sent them.
        params = {k: v for k, v in body.items() if k not in ("system", "tools", "messages")}
        assert (
            parts[0].startswith("System prompt") and f"{size(body['system']):,} bytes" in parts[0]
        )
        assert parts[1].startswith("Tools") and f"{size(body['tools']):,} bytes" in parts[1]
        assert parts[2].startswith("Messages") and f"{size(body['messages']):,} bytes" in parts[2]
        assert parts[3].startswith("API parameters") and f"{size(params):,} bytes" in parts[3]
        assert f"{len(sent[turn - 1].raw):,} bytes" in html_text

        # Tokens from the count_tokens endpoint (the server's synthetic counts), not estimates.
        counted = server.requests[counting_from:]
        assert [r.path for r in counted] == [COUNT_PATH] * 4
        minimal, system, tools, whole = (billed_bytes(r.body, r.raw) // 4 for r in counted)
        assert f"{system - minimal:,} tokens (count_tokens)" in parts[0]
        assert f"{tools - minimal:,} tokens (count_tokens)" in parts[1]
        messages = whole - (system - minimal) - (tools - minimal)
        assert f"{messages:,} tokens (count_tokens)" in parts[2]
        assert not any("estimate" in part for part in parts[:3])

        # The cache figures and tokens the server answered with.
        input_tokens = billed_bytes(body, sent[turn - 1].raw) // 4
        read = script.cache_read_input_tokens or 0
        wrote = script.cache_creation_input_tokens or 0
        assert (
            f"{input_tokens + read + wrote:,} input tokens in all = {input_tokens:,} new "
            f"+ {read:,} read from the cache + {wrote:,} written to the cache"
        ) in html_text

        # Deferred tools marked; the cache breakpoint on the last tool of the prefix.
        rows = {
            name: row
            for row in re.findall(r"<tr[^>]*>.*?</tr>", html_text, re.S)
            for name in re.findall(r"<td[^>]*><code[^>]*>([^<]+)</code>", row)[:1]
        }
        for tool in body["tools"]:
            row = rows[tool["name"]]
            assert ("◇ deferred (defer_loading)" in row) == bool(tool.get("defer_loading"))
            assert ("◆ cache breakpoint" in row) == ("cache_control" in tool)
        assert "JSON of the request body" in html_text and f"session.request({turn})" in plain

    # Turn 3: every tool_use linked to its tool_result and back; the found tool loaded.
    html_text, plain = view(kernel, "%agent request -1")
    ids = [
        block["id"]
        for message in sent[2].body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
    assert len(ids) == 2
    for use_id in ids:
        for kind, other in (("use", "result"), ("result", "use")):
            assert f'id="toolhost-req3-{kind}-{use_id}"' in html_text
            assert f'href="#toolhost-req3-{other}-{use_id}"' in html_text
    assert f"{ADD} (" in plain and "loaded by a tool_reference" in plain
    assert "Deferral saved" in plain

    too_far = kernel.run("%agent request 9")
    assert "There is no turn 9 yet" in too_far.text()
    wrong = kernel.run("%agent request first")
    assert wrong.status == "error" and "takes a turn number" in wrong.text()
