"""WebFetch's `prompt` answered by the session's small model, end to end: a real Session,
the real `anthropic` client against the loopback Messages API, a real page on 127.0.0.1,
and record/replay of the small model's requests through a cassette."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from loopback_http import serve

from jupyter_toolhost import Session
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import (
    AssistantMessage,
    BlockComplete,
    BlockStart,
    MessageComplete,
    ModelEvent,
    ModelRequest,
)
from jupyter_toolhost.model.cassette import CassetteMismatch, CassetteModel
from jupyter_toolhost.model.small import DEFAULT_SMALL_MODEL, SMALL_MODEL_ENV, SYSTEM
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MAIN = "claude-sonnet-4-5"
PAGES = {
    "/page": b"<html><body><h1>Hello</h1><p>The release is on <b>Tuesday</b>.</p></body></html>",
    "/other": b"<html><body><h1>Other</h1><p>Nothing happens on Friday.</p></body></html>",
}


class _Pages(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = PAGES.get(self.path)
        if self.path == "/other":
            time.sleep(0.3)  # so the small model is always asked about /page first
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body or b"missing")


@pytest.fixture(autouse=True)
def no_small_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SMALL_MODEL_ENV, raising=False)


@pytest.fixture
def pages() -> Iterator[str]:
    with serve(_Pages) as port:
        yield f"http://127.0.0.1:{port}"


def is_small(body: dict[str, Any]) -> bool:
    return body.get("model") != MAIN


def prompt_text(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"][0]["text"]


def scripted(
    agent: list[Turn], small: Callable[[dict[str, Any]], Turn]
) -> Callable[[dict[str, Any]], Turn]:
    """Main-model requests get the agent's turns; the small model's go to `small`."""

    def answer(body: dict[str, Any]) -> Turn:
        return small(body) if is_small(body) else agent.pop(0)

    return answer


def fetch_turns(*calls: dict[str, Any]) -> list[Turn]:
    return [Turn([tool_use("WebFetch", call) for call in calls]), Turn([text("Done.")])]


def session_on(model: Any, cwd: Path, **options: Any) -> Session:
    settings = cwd / ".toolhost" / "settings.local.json"  # the pages are on the loopback
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"permissions": {"allow": ["WebFetch(domain:localhost)"]}}')
    return Session(
        model=model,
        model_id=MAIN,
        cwd=cwd,
        permission_mode="bypassPermissions",
        trust_folder=True,  # the folder's settings are the test's own
        **options,
    )


def tool_results(session: Session) -> list[str]:
    return [
        str(block["content"])
        for message in session.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def answers_from_the_page(body: dict[str, Any]) -> Turn:
    asked = prompt_text(body)
    day = "Tuesday" if "**Tuesday**" in asked else "Friday"
    return Turn([text(f"The page says {day}.")])


async def test_the_prompt_is_answered_by_the_small_model(pages: str, tmp_path: Path) -> None:
    small_requests: list[dict[str, Any]] = []

    def small(body: dict[str, Any]) -> Turn:
        small_requests.append(body)
        return answers_from_the_page(body)

    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day is the release?"})
    with MessagesServer(scripted(agent, small)) as server:
        session = session_on(AnthropicModel(base_url=server.base_url, api_key="k"), tmp_path)
        assert await session.run("When is the release?") == "Done."
    assert server.errors == []
    [request] = small_requests
    assert request["model"] == DEFAULT_SMALL_MODEL == "claude-haiku-4-5"
    assert request["system"] == [{"type": "text", "text": SYSTEM}]
    assert "tools" not in request  # a side question: no tools, no conversation
    asked = prompt_text(request)
    assert "# Hello" in asked and "**Tuesday**" in asked and "Which day is the release?" in asked
    [result] = tool_results(session)
    assert result == f"Fetched {pages}/page\n\nThe page says Tuesday."
    assert "# Hello" not in result  # the model gets the answer, not the page


@pytest.mark.parametrize("how", ["option", "environment"])
async def test_the_small_model_id_is_configurable(
    how: str, pages: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models: list[str] = []

    def small(body: dict[str, Any]) -> Turn:
        models.append(body["model"])
        return answers_from_the_page(body)

    options: dict[str, Any] = {}
    if how == "option":
        options["small_model"] = "claude-haiku-by-option"
        monkeypatch.setenv(SMALL_MODEL_ENV, "claude-haiku-loses-to-the-option")
    else:
        monkeypatch.setenv(SMALL_MODEL_ENV, "claude-haiku-by-environment")
    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Day?"})
    with MessagesServer(scripted(agent, small)) as server:
        session = session_on(
            AnthropicModel(base_url=server.base_url, api_key="k"), tmp_path, **options
        )
        await session.run("Day?")
    assert models == [f"claude-haiku-by-{how}"]


@pytest.mark.parametrize("off", ["option", "environment"])
async def test_turned_off_the_page_comes_back_with_a_note(
    off: str, pages: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options: dict[str, Any] = {"small_model": ""} if off == "option" else {}
    if off == "environment":
        monkeypatch.setenv(SMALL_MODEL_ENV, "none")
    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day?"})
    with MessagesServer(agent) as server:
        session = session_on(
            AnthropicModel(base_url=server.base_url, api_key="k"), tmp_path, **options
        )
        await session.run("Which day?")
    assert len(server.requests) == 2  # the two main requests; no small-model request
    [result] = tool_results(session)
    assert "No small model is configured, so the prompt was not applied" in result
    assert "# Hello" in result and "**Tuesday**" in result


async def test_a_failing_small_model_gives_the_page_and_says_why(
    pages: str, tmp_path: Path
) -> None:
    def small(body: dict[str, Any]) -> Turn:
        return Turn(status=400, error_message="model: no such model")

    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day?"})
    with MessagesServer(scripted(agent, small)) as server:
        session = session_on(AnthropicModel(base_url=server.base_url, api_key="k"), tmp_path)
        assert await session.run("Which day?") == "Done."
    [result] = tool_results(session)
    assert "The small model could not answer (ModelAPIError" in result
    assert "no such model" in result and "the prompt was not applied" in result
    assert "**Tuesday**" in result


async def test_a_model_that_is_not_a_messages_client_gets_no_small_model(
    pages: str, tmp_path: Path
) -> None:
    """A scripted `Model` (not the Anthropic client or a cassette) is never sent side
    requests: its turns belong to the conversation."""
    call = {"url": f"{pages}/page", "prompt": "Which day?"}
    scripted_model = Scripted([tool_call("WebFetch", call), [{"type": "text", "text": "Done."}]])
    session = session_on(scripted_model, tmp_path)
    assert await session.run("Which day?") == "Done."
    assert [r.model for r in scripted_model.seen] == [MAIN, MAIN]
    [result] = tool_results(session)
    assert "No small model is configured" in result and "**Tuesday**" in result


async def test_a_session_search_tool_without_a_backend_fails_clearly(tmp_path: Path) -> None:
    """The notebook's WebSearch (`FROM_SESSION`) is offered; in a session whose model has
    no server-side search the call fails with a clear error instead of searching."""
    from jupyter_toolhost.tools import builtin_tools
    from jupyter_toolhost.tools.web_search import FROM_SESSION

    scripted_model = Scripted(
        [tool_call("WebSearch", {"query": "python"}), [{"type": "text", "text": "Done."}]]
    )
    session = Session(
        model=scripted_model,
        model_id=MAIN,
        cwd=tmp_path,
        permission_mode="bypassPermissions",
        tools=builtin_tools(cwd=tmp_path, web_search=FROM_SESSION),
    )
    assert await session.run("Search") == "Done."
    assert "WebSearch" in [t["name"] for t in scripted_model.seen[0].tools]
    result = session.messages[2]["content"][0]
    assert result.get("is_error")
    assert "This session's model has no web search" in str(result["content"])


def tool_call(name: str, input: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": f"toolu_{name}", "name": name, "input": input}]


class Scripted:
    """A `Model` that is neither the Anthropic client nor a cassette."""

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = turns
        self.seen: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.seen.append(request)
        content = self.turns.pop(0)
        for index, block in enumerate(content):
            yield BlockStart(index, block["type"])
            yield BlockComplete(index, block)
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        yield MessageComplete(AssistantMessage(content, stop))


async def record(cassette: Path, pages: str, cwd: Path, agent: list[Turn]) -> Session:
    with MessagesServer(scripted(agent, answers_from_the_page)) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="k")
        session = session_on(CassetteModel(cassette, mode="record", inner=inner), cwd)
        assert await session.run("When?") == "Done."
    assert server.errors == []
    return session


async def test_the_small_model_is_recorded_and_replayed_from_the_cassette(
    pages: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "fetch.json"
    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day is the release?"})
    recorded = await record(cassette, pages, tmp_path / "a", agent)

    interactions = json.loads(cassette.read_text())["interactions"]
    assert [i["request"].get("purpose") for i in interactions] == [None, "small_model", None]
    small = interactions[1]["request"]
    assert small["model"] == DEFAULT_SMALL_MODEL and "Which day" in json.dumps(small["last"])
    assert "model" not in interactions[0]["request"]  # the loop's requests are unchanged
    assert interactions[1]["response"]["content"] == [
        {"type": "text", "text": "The page says Tuesday."}
    ]

    replay = CassetteModel(cassette, mode="replay")  # no Messages server: no network
    replayed = session_on(replay, tmp_path / "b")
    assert await replayed.run("When?") == "Done."
    assert replay.remaining == 0
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
    assert tool_results(replayed) == [f"Fetched {pages}/page\n\nThe page says Tuesday."]


async def test_concurrent_fetches_replay_whatever_order_they_arrive_in(
    pages: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "two.json"
    agent = fetch_turns(
        {"url": f"{pages}/page", "prompt": "Which day?"},
        {"url": f"{pages}/other", "prompt": "Which day?"},
    )
    recorded = await record(cassette, pages, tmp_path / "a", agent)
    data = json.loads(cassette.read_text())
    assert [i["request"].get("purpose") for i in data["interactions"]] == [
        None, "small_model", "small_model", None,
    ]  # fmt: skip
    # Swap the two side requests as if the other fetch had finished first when recording.
    data["interactions"][1:3] = data["interactions"][2:0:-1]
    cassette.write_text(json.dumps(data))

    replayed = session_on(CassetteModel(cassette, mode="replay"), tmp_path / "b")
    assert await replayed.run("When?") == "Done."
    assert sorted(tool_results(replayed)) == sorted(tool_results(recorded))
    assert any("Tuesday" in r for r in tool_results(replayed))
    assert any("Friday" in r for r in tool_results(replayed))


async def test_replay_never_serves_a_loop_response_to_the_small_model(
    pages: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "fetch.json"
    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day?"})
    await record(cassette, pages, tmp_path / "a", agent)
    data = json.loads(cassette.read_text())
    del data["interactions"][1]["request"]["purpose"]  # now it looks like a loop request
    cassette.write_text(json.dumps(data))

    replayed = session_on(CassetteModel(cassette, mode="replay"), tmp_path / "b")
    with pytest.raises(CassetteMismatch) as raised:
        await replayed.run("When?")
    assert "Re-record" in str(raised.value)
    [result] = tool_results(replayed)
    assert "The small model could not answer (CassetteMismatch" in result


async def test_a_cassette_from_before_the_small_model_fails_at_the_loops_request(
    pages: str, tmp_path: Path
) -> None:
    """Recorded with the small model off, replayed with it on: the side request is refused
    without using up the loop's recording, so the diff is about the loop's request #2 and
    shows the tool result that changed."""
    cassette = tmp_path / "old.json"
    agent = fetch_turns({"url": f"{pages}/page", "prompt": "Which day?"})
    with MessagesServer(agent) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="k")
        old = session_on(CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a",
                         small_model="none")  # fmt: skip
        await old.run("When?")
    replay = CassetteModel(cassette, mode="replay")
    with pytest.raises(CassetteMismatch) as raised:
        await session_on(replay, tmp_path / "b").run("When?")
    message = str(raised.value)
    assert "Request #2" in message
    assert any(line.startswith("-") and "No small model is configured" in line
               for line in raised.value.diff.splitlines())  # fmt: skip
    assert replay.remaining == 1  # the request with no recorded answer was never served
