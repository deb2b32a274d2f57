"""WebSearch and WebFetch's prompt in a real kernel through `%%agent`: the session's own
model (the `anthropic` client against the loopback Messages API) runs the server-side
search and the small model; the page is served on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel
from loopback_http import serve

from jupyter_toolhost.model.web_search import SERVER_TOOL
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

MAIN = "claude-sonnet-4-5"
PAGE = b"<html><body><h1>Changelog</h1><p>Version <b>7.3</b> adds sockets.</p></body></html>"


class _Page(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(PAGE)


class Script:
    """Routes each request: a search (it carries the server tool), the small model (any
    other model id), or the next scripted turn of the agent."""

    def __init__(self) -> None:
        self.agent: list[Turn] = []
        self.searches: list[dict[str, Any]] = []
        self.small: list[dict[str, Any]] = []
        self.main: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Turn:
        if any(tool.get("type") == SERVER_TOOL for tool in body.get("tools", [])):
            self.searches.append(body)
            return Turn([text("Python 3.14 was released on 7 October 2025.")])
        if body.get("model") != MAIN:
            self.small.append(body)
            asked = body["messages"][-1]["content"][0]["text"]
            return Turn([text("Version 7.3." if "**7.3**" in asked else "Not on the page.")])
        self.main.append(body)
        return self.agent.pop(0)


@pytest.fixture(scope="module")
def script() -> Script:
    return Script()


@pytest.fixture(scope="module")
def server(script: Script) -> Iterator[MessagesServer]:
    with MessagesServer(script) as running:
        yield running


@pytest.fixture(scope="module")
def page() -> Iterator[str]:
    with serve(_Page) as port:
        yield f"http://127.0.0.1:{port}/changelog"


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    running = agent_kernel(
        tmp_path_factory.mktemp("kernel"), server.base_url, env={"JUPYTER_TOOLHOST_MODEL": MAIN}
    )
    try:
        yield running
    finally:
        running.close()


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def test_web_search_runs_in_a_notebook_on_the_sessions_model(
    kernel: Kernel, server: MessagesServer, script: Script
) -> None:
    query = {"query": "latest python release", "blocked_domains": ["spam.example"]}
    script.agent += [Turn([tool_use("WebSearch", query)]), Turn([text("It is Python 3.14.")])]
    run = kernel.run("%%agent --new --mode bypassPermissions\nWhat is the latest Python?")

    assert run.status == "ok", run.text()
    assert "It is Python 3.14." in run.answer
    assert server.errors == []
    first, second = script.main[-2:]
    assert "WebSearch" in [t["name"] for t in first["tools"]]  # offered in the notebook
    [search] = script.searches
    [tool] = search["tools"]
    assert tool["blocked_domains"] == ["spam.example"] and search["model"] == MAIN
    assert "latest python release" in json.dumps(search["messages"])
    [result] = tool_results(second)
    assert not result.get("is_error"), result
    assert "Python 3.14 was released on 7 October 2025." in json.dumps(result["content"])


def test_web_fetch_prompt_uses_the_configured_small_model(
    kernel: Kernel, server: MessagesServer, script: Script, page: str
) -> None:
    configured = kernel.run(
        "import json, pathlib\n"  # the page is on the loopback: that takes an allow rule
        "pathlib.Path('.toolhost').mkdir(exist_ok=True)\n"
        "pathlib.Path('.toolhost/settings.local.json').write_text(json.dumps("
        "{'permissions': {'allow': ['WebFetch(domain:127.0.0.1)']}}))\n"
        "get_ipython().config.ToolHost.small_model = 'claude-haiku-by-traitlet'\n"
        "%reload_ext jupyter_toolhost"
    )
    assert configured.status == "ok", configured.text()
    call = {"url": page, "prompt": "Which version adds sockets?"}
    script.agent += [Turn([tool_use("WebFetch", call)]), Turn([text("Version 7.3 does.")])]
    run = kernel.run("%%agent --new --mode bypassPermissions\nWhich version adds sockets?")

    assert run.status == "ok", run.text()
    assert "Version 7.3 does." in run.answer
    assert server.errors == []
    [small] = script.small
    assert small["model"] == "claude-haiku-by-traitlet"
    asked = small["messages"][-1]["content"][0]["text"]
    assert "# Changelog" in asked and "Which version adds sockets?" in asked
    [result] = tool_results(script.main[-1])
    assert json.dumps(result["content"]).endswith('Version 7.3."')
    assert "# Changelog" not in json.dumps(result["content"])
