"""WebSearch on the Messages API's server-side search tool, through a real Session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost import Session
from jupyter_toolhost.core.types import ToolError
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.web_search import SERVER_TOOL, results_of
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use


def is_search(body: dict[str, Any]) -> bool:
    return any(t.get("type") == SERVER_TOOL for t in body.get("tools", []))


async def test_web_search_sends_the_server_tool_and_returns_its_answer(tmp_path: Path) -> None:
    agent = [
        Turn(
            [tool_use("WebSearch", {"query": "python release", "allowed_domains": ["python.org"]})]
        ),
        Turn([text("Found it.")]),
    ]
    searches: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        if is_search(body):
            searches.append(body)
            return Turn([text("Python 3.14 came out in October 2025.")])
        return agent.pop(0)

    with MessagesServer(answer) as server:
        session = Session(
            model=AnthropicModel(base_url=server.base_url, api_key="test"),
            model_id="claude-sonnet-4-5",
            cwd=tmp_path,
            permission_mode="default",
        )
        assert await session.run("When did the latest Python come out?") == "Found it."
    assert server.errors == []
    first = server.requests[0].body
    assert "WebSearch" in [t.get("name") for t in first["tools"]]
    [search] = searches
    [tool] = search["tools"]
    assert tool["allowed_domains"] == ["python.org"] and tool["name"] == "web_search"
    result = session.messages[2]["content"][0]
    assert not result.get("is_error")
    assert "Python 3.14 came out in October 2025." in result["content"]


def test_results_are_read_from_the_server_blocks() -> None:
    blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "Python 3.14",
                    "url": "https://python.org/x",
                },
                {
                    "type": "web_search_result",
                    "title": "What's new",
                    "url": "https://docs.python.org",
                },
            ],
        },
        {"type": "text", "text": "It was released in October."},
    ]
    assert results_of(blocks) == [
        {"title": "Python 3.14", "url": "https://python.org/x"},
        {"title": "What's new", "url": "https://docs.python.org"},
        {"title": "Summary of the results", "url": "", "snippet": "It was released in October."},
    ]
    failed = [
        {
            "type": "web_search_tool_result",
            "content": {"type": "x", "error_code": "max_uses_exceeded"},
        }
    ]
    with pytest.raises(ToolError, match="max_uses_exceeded"):
        results_of(failed)
