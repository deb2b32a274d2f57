"""`session.request(n)` and the request view, against the loopback Messages API.

The session runs on the real `anthropic` client; the server records the bytes it was sent,
so each turn's kept body is compared with what actually went over the wire. The view is
built from a real sent request, with counts from the server's count_tokens endpoint (a
quarter of the counted body's bytes, less unreferenced deferred tools) or as estimates.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.sent import SentLog
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.jupyter.views.request_view import (
    ESTIMATE,
    request_display,
    request_view,
    tokens_for,
)
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelRequest, Usage
from jupyter_toolhost.testing import MessagesServer, RecordedRequest, Turn, text, tool_use
from jupyter_toolhost.testing.api_view import billed_bytes

MODEL = "claude-sonnet-4-5"
WEATHER = "mcp__weather__get_forecast"
CHAT = "mcp__chat__post_message"


class CityInput(BaseModel):
    city: str


def pool() -> list[Tool[Any]]:
    notes = build_tool(
        name="Notes",
        input_model=CityInput,
        call=lambda i, c: f"no notes on {i.city}",
        description="Read the user's notes about a city.",
        read_only=True,
    )
    deferred = [
        build_tool(
            name=name,
            input_model=CityInput,
            call=lambda i, c: f"rain in {i.city}",
            description=description,
            should_defer=True,
            is_mcp=True,
            read_only=True,
        )
        for name, description in (
            (WEATHER, "Get the weather forecast (temperature, rain, wind) for a city."),
            (CHAT, "Send a message about a city to a team chat channel."),
        )
    ]
    return [notes, *deferred]


SCRIPT = [
    Turn([tool_use("ToolSearch", {"query": f"select:{WEATHER}"})], cache_creation_input_tokens=900),
    Turn([tool_use(WEATHER, {"city": "Oslo"})], cache_read_input_tokens=900),
    Turn(
        [text("It will rain in Oslo.")], cache_read_input_tokens=950, cache_creation_input_tokens=40
    ),
]


def session_for(server: MessagesServer, tmp_path: Path) -> Session:
    return Session(
        tools=pool(),
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=tmp_path,
        load_settings=False,
        permission_mode="bypassPermissions",
    )


def sent_to_messages(server: MessagesServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.path == "/v1/messages"]


def compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def test_request_n_is_the_body_the_server_received(tmp_path: Path) -> None:
    with MessagesServer(SCRIPT) as server:
        session = session_for(server, tmp_path)
        with pytest.raises(IndexError, match="No model request has been sent"):
            session.request()
        assert await session.run("Will it rain in Oslo?") == "It will rain in Oslo."
    assert server.errors == []
    received = sent_to_messages(server)
    assert len(received) == 3
    for turn, recorded in enumerate(received, 1):
        assert session.request(turn) == recorded.body
        assert session.request(turn - 4) == recorded.body  # -3, -2, -1
        assert session.sent_request(turn).size == len(recorded.raw)  # byte for byte
        assert recorded.body["stream"] is True
    assert session.request() == received[-1].body

    # The usage each response reported, cache reads and writes included.
    for n, (recorded, turn) in enumerate(zip(received, SCRIPT, strict=True), 1):
        kept = session.sent_request(n).usage
        assert kept is not None
        assert kept.cache_read_input_tokens == (turn.cache_read_input_tokens or 0)
        assert kept.cache_creation_input_tokens == (turn.cache_creation_input_tokens or 0)
        assert kept.input_tokens == billed_bytes(recorded.body, recorded.raw) // 4

    # What deferral left out: both tools before the search, the unfound one after.
    assert [t.name for t in session.sent_request(1).deferral.unloaded] == [WEATHER, CHAT]
    assert [t.name for t in session.sent_request(3).deferral.unloaded] == [CHAT]
    assert session.sent_request(1).deferral.finder == "ToolSearch"

    # A deep copy: changing it changes nothing kept.
    copy = session.request(1)
    copy["messages"][0]["content"].clear()
    assert session.request(1) == received[0].body

    for wrong, message in ((0, "count from 1"), (4, "no turn 4 yet"), (-4, "no turn -4")):
        with pytest.raises(IndexError, match=message):
            session.request(wrong)


async def test_compaction_summaries_are_not_turns(tmp_path: Path) -> None:
    script = [Turn([text("first answer")]), Turn([text("a summary")]), Turn([text("second")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        await session.run("one")
        assert await session.compact() is not None
        await session.run("two")
    received = sent_to_messages(server)
    assert len(received) == 3
    assert session.request(1) == received[0].body
    assert session.request(2) == received[2].body  # the summary request is skipped
    with pytest.raises(IndexError):
        session.request(3)


def test_the_log_keeps_the_last_turns_and_shares_unchanged_text() -> None:
    log = SentLog(cap=3)
    messages: list[dict[str, Any]] = []
    for turn in range(1, 6):
        messages.append({"role": "user", "content": f"prompt {turn}"})
        request = ModelRequest(model=MODEL, messages=list(messages), max_tokens=100)
        log.complete(log.add(request), Usage(input_tokens=turn))
        messages.append({"role": "assistant", "content": f"answer {turn}"})
    assert len(log) == 3 and log.turns == 5
    assert log.get(5).body["messages"] == messages[:-1]
    assert log.get(3).usage == Usage(input_tokens=3)
    with pytest.raises(IndexError, match=r"Turn 2 is no longer kept.*turns 3–5"):
        log.get(2)
    # The first message's text is one string shared by every kept turn, not a copy each.
    firsts = [dict(log.get(n).fields)["messages"][0] for n in (3, 4, 5)]
    assert firsts[0] is firsts[1] is firsts[2]


async def test_view_counts_tokens_with_the_endpoint(tmp_path: Path) -> None:
    with MessagesServer(SCRIPT) as server:
        session = session_for(server, tmp_path)
        await session.run("Will it rain in Oslo?")
        before = len(server.requests)
        shown = request_view(session, 2)
    assert server.errors == []
    counted = server.requests[before:]
    assert [r.path for r in counted] == ["/v1/messages/count_tokens"] * 4
    minimal, system, tools, whole = (billed_bytes(r.body, r.raw) // 4 for r in counted)
    body = session.request(2)
    assert counted[3].body["messages"] == body["messages"]
    assert counted[3].body["tools"] == body["tools"]
    html_text = shown.data["text/html"]
    summaries = re.findall(r"<summary[^>]*>(.*?)</summary>", html_text)
    assert f"{system - minimal:,} tokens (count_tokens)" in summaries[0]
    assert f"{tools - minimal:,} tokens (count_tokens)" in summaries[1]
    messages = whole - (system - minimal) - (tools - minimal)
    assert f"{messages:,} tokens (count_tokens)" in summaries[2]
    assert not any(ESTIMATE in s for s in summaries)
    assert f"{whole:,} input tokens (count_tokens)" in html_text


async def test_view_is_plain_html_with_the_four_parts(tmp_path: Path) -> None:
    with MessagesServer(SCRIPT) as server:
        session = session_for(server, tmp_path)
        await session.run("Will it rain in Oslo?")
    sent = session.sent_request(3)
    body = sent.body
    tokens = tokens_for(object(), body)  # not the Anthropic client: estimates
    assert not tokens.counted
    shown = request_display(sent, body=body, tokens=tokens)
    assert set(shown.data) == {"text/html", "text/plain"}
    html_text = shown.data["text/html"]
    assert "<script" not in html_text and "onclick" not in html_text
    summaries = re.findall(r"<summary[^>]*>(.*?)</summary>", html_text)
    titles = [re.sub(r"<[^>]+>", "", s).split(" — ")[0] for s in summaries]
    assert titles == [
        "System prompt",
        "Tools",
        "Messages",
        "API parameters",
        "JSON of the request body",
    ]
    assert f"{compact(body['system']):,} bytes" in summaries[0]
    assert f"{compact(body['tools']):,} bytes" in summaries[1]
    assert f"{compact(body['messages']):,} bytes" in summaries[2]
    params = {k: v for k, v in body.items() if k not in ("system", "tools", "messages")}
    assert f"{compact(params):,} bytes" in summaries[3]
    assert all(f"({ESTIMATE})" in s for s in summaries[:3])
    # The tool_use of turn 1 and its result link to each other.
    assert 'href="#toolhost-req3-result-toolu_01"' in html_text
    assert 'id="toolhost-req3-result-toolu_01"' in html_text
    assert 'href="#toolhost-req3-use-toolu_01"' in html_text
    assert 'id="toolhost-req3-use-toolu_01"' in html_text
    assert "+ 950 read from the cache + 40 written to the cache" in html_text
    assert "session.request(3)" in shown.data["text/plain"]
    # In the plain text too: parts, deferred marks, the breakpoint.
    plain = shown.data["text/plain"]
    assert (
        f"{WEATHER} (" in plain and "deferred (defer_loading): loaded by a tool_reference" in plain
    )
    assert "◆ cache breakpoint" in plain
    # Where each breakpoint sits: the last resident tool, the system prompt, the last block.
    last = len(body["messages"])
    blocks = body["messages"][-1]["content"]
    tools = [t["name"] for t in body["tools"]]
    assert (
        f"Cache breakpoints (3 of 4): tool {tools.index('ToolSearch') + 1} (ToolSearch) · "
        f"system block {len(body['system'])} · message {last} block {len(blocks)} "
        f"({blocks[-1]['type']})."
    ) in plain
    chat = next(t for t in session.tools if t.name == CHAT)
    saved = compact(chat.to_api())
    assert f"Deferral saved {saved:,} bytes (≈ {saved // 4:,} tokens" in plain


PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
"""A 1×1 PNG (70 bytes), as base64."""


async def test_an_image_in_a_result_is_an_image_and_the_counts_agree(tmp_path: Path) -> None:
    with MessagesServer(SCRIPT) as server:
        session = session_for(server, tmp_path)
        await session.run("Will it rain in Oslo?")
    sent = session.sent_request(1)
    body = sent.body
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    body["messages"].append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": [image]}],
        }
    )
    shown = request_display(sent, body=body, tokens=tokens_for(object(), body))
    html_text, plain = shown.data["text/html"], shown.data["text/plain"]
    # The image is drawn once, from its data, and named; its base64 is nowhere as text.
    assert html_text.count(PIXEL) == 1
    assert f'<img src="data:image/png;base64,{PIXEL}"' in html_text
    assert "[image: image/png, 70 B]" in plain and PIXEL not in plain
    # The Tools part counts the deferred tools as the deferral line above it does.
    unloaded = len(sent.deferral.unloaded)
    assert unloaded
    said = f"{unloaded} deferred tool{'s' if unloaded > 1 else ''} not loaded"
    [deferral] = [line for line in plain.splitlines() if line.startswith("Deferral saved")]
    [tools] = [line for line in plain.splitlines() if line.startswith("Tools — ")]
    assert said in deferral and said in tools, (deferral, tools)
    assert tools.startswith(f"Tools — {len(body['tools'])} sent (")
    # Each description is left-aligned, two lines at most, whole in its tooltip.
    for tool in body["tools"]:
        cell = re.search(
            r'<td class="toolhost-description" style="([^"]*)" title="([^"]*)">',
            html_text[html_text.index(f">{tool['name']}</code>") :],
        )
        assert cell is not None and "text-align:left" in cell.group(1)
        assert html.unescape(cell.group(2)) == tool.get("description", "")


def test_the_home_folder_is_written_from_tilde(monkeypatch: Any, tmp_path: Any) -> None:
    """A kept `%agent request` (or a picture of it) does not carry the person's own paths."""
    from jupyter_toolhost.jupyter.views.render import esc
    from jupyter_toolhost.jupyter.views.request_view import HOME_NOTE, _from_home

    monkeypatch.setenv("HOME", str(tmp_path))
    text = f"Working directory: {tmp_path}/project\n"
    assert _from_home(text) == f"Working directory: ~/project\n\n{HOME_NOTE}"
    assert str(tmp_path) not in _from_home(esc(f"<{tmp_path}/a & b>"), esc)
    assert _from_home("nothing here") == "nothing here"
