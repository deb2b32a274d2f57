"""The loopback Messages API server, exercised with the real `anthropic` client.

Measured with anthropic 2.16 (which talks through `httpx2`) against this server:

- An abrupt cut (`cut_after_blocks` / `cut_mid_block`: the connection drops inside the
  chunked body) makes iterating the stream, or `await stream.get_final_message()`, raise.
  What it raises depends on the SDK's release: 2.16 let httpx's `RemoteProtocolError("peer
  closed connection without sending complete message body (incomplete chunked read)")`
  through; 2.17 wraps it in `anthropic.APIConnectionError`, with that error as its cause.
  Either way it is not retried (the response had already started), and the tests below
  assert only that: an error whose chain of causes names the cut. If the caller catches it
  and then calls `get_final_message()`, it gets the fragment accumulated so far:
  `stop_reason` None, complete blocks intact, a half-streamed tool_use with the input
  parsed from the partial JSON (here `{}`).
- A clean cut (`clean_cut=True`: the body ends properly, just without `message_delta` /
  `message_stop`) raises nothing: `get_final_message()` returns the fragment with
  `stop_reason` None.
- A non-streaming request to a cut turn (connection dropped before any response) is
  an `APIConnectionError` inside the client, which retries it after its own backoff
  (~0.5 s, there are no headers to obey): the next turn answers.
- `retry-after: 0` alone is ignored by the client (it backs off 0.375-0.5 s); the
  server's `retry-after-ms` makes injected-error retries take milliseconds.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import MessageParam, ToolParam

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-test"
HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]
TOOL: ToolParam = {"name": "read", "input_schema": {"type": "object"}}

ClientFactory = Callable[[MessagesServer], anthropic.AsyncAnthropic]


@pytest.fixture
async def client_for() -> AsyncIterator[ClientFactory]:
    clients: list[anthropic.AsyncAnthropic] = []

    def make(server: MessagesServer) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="test", max_retries=2)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


async def stream_final(client: anthropic.AsyncAnthropic, **kwargs: Any) -> Any:
    kwargs = {"model": MODEL, "max_tokens": 100, "messages": HELLO, **kwargs}
    async with client.messages.stream(**kwargs) as stream:
        return await stream.get_final_message()


# --- happy paths --------------------------------------------------------------------------


async def test_streamed_text_turn(client_for: ClientFactory) -> None:
    with MessagesServer([Turn([text("Hello from the loopback server")])]) as server:
        client = client_for(server)
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            kinds = [event.type async for event in stream]
            message = await stream.get_final_message()

    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from the loopback server"
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert kinds.count("text") > 1  # several text_delta events
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    (request,) = server.requests
    assert request.body["stream"] is True
    assert "anthropic-version" in request.headers
    assert message.usage.input_tokens == len(request.raw) // 4
    assert server.errors == []


async def test_streamed_three_tool_uses(client_for: ClientFactory) -> None:
    inputs = [{"path": "a.py"}, {"pattern": "def \\w+", "glob": "*.py"}, {"n": [1, 2, 3]}]
    names = ["read", "grep", "nums"]
    blocks = [tool_use(name, value) for name, value in zip(names, inputs, strict=True)]
    with MessagesServer([Turn([text("Let me look."), *blocks])]) as server:
        client = client_for(server)
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            kinds = [event.type async for event in stream]
            message = await stream.get_final_message()

    uses = [block for block in message.content if block.type == "tool_use"]
    assert [block.input for block in uses] == inputs
    assert [block.id for block in uses] == ["toolu_01", "toolu_02", "toolu_03"]
    assert message.stop_reason == "tool_use"
    assert kinds.count("input_json") >= 3 * 3  # partial_json split into several chunks
    assert server.errors == []


async def test_non_streaming_message(client_for: ClientFactory) -> None:
    turn = Turn([text("Sure."), tool_use("read", {"path": "x"}, id="toolu_custom")])
    with MessagesServer([turn]) as server:
        message = await client_for(server).messages.create(
            model=MODEL, max_tokens=100, messages=HELLO
        )
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].type == "tool_use" and message.content[1].id == "toolu_custom"
    assert message.stop_reason == "tool_use"
    assert message.id == "msg_01"
    assert "stream" not in server.requests[0].body
    assert server.errors == []


async def test_count_tokens(client_for: ClientFactory) -> None:
    with MessagesServer() as server:
        result = await client_for(server).messages.count_tokens(model=MODEL, messages=HELLO)
    assert result.input_tokens == len(server.requests[0].raw) // 4
    assert server.errors == []


async def test_callable_script_sees_the_request(client_for: ClientFactory) -> None:
    def echo(request: dict[str, Any]) -> Turn:
        return Turn([text(f"you said {request['messages'][-1]['content']}")])

    with MessagesServer(echo) as server:
        message = await stream_final(client_for(server))
    assert message.content[0].text == "you said hello"


async def test_tool_round_trip_and_prefill_are_valid(client_for: ClientFactory) -> None:
    turns = [Turn([tool_use("read", {"path": "a"})]), Turn([text("done")]), Turn([text("x")])]
    with MessagesServer(turns) as server:
        client = client_for(server)
        first = await stream_final(client, tools=[TOOL])
        use = first.content[0]
        follow_up = [
            *HELLO,
            {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "text of a"},
                    {"type": "text", "text": "go on"},
                ],
            },
        ]
        await stream_final(client, tools=[TOOL], messages=follow_up)
        prefill = [*HELLO, {"role": "assistant", "content": "The answer is"}]
        await stream_final(client, messages=prefill)
    assert server.errors == []


async def test_raw_sse_wire_format() -> None:
    with MessagesServer([Turn([text("hi"), tool_use("read", {"path": "a"})])]) as server:
        body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, "stream": True}
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            response = await http.post("/v1/messages", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["request-id"].startswith("req_")
    frames = response.text.split("\n\n")
    assert frames[-1] == ""
    names = [frame.split("\n")[0].removeprefix("event: ") for frame in frames[:-1]]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    for frame in frames[:-1]:
        event_line, data_line = frame.split("\n")
        assert json.loads(data_line.removeprefix("data: "))["type"] == event_line[7:]
    delta = json.loads(frames[-3].split("\n")[1][6:])
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 0


# --- validation ---------------------------------------------------------------------------


def _assistant_uses(*ids: str) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": i, "name": "read", "input": {}} for i in ids]
    return {"role": "assistant", "content": content}


def _result(tool_use_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "empty messages": ({"messages": []}, "messages: at least one message is required"),
    "first is assistant": (
        {"messages": [{"role": "assistant", "content": "hi"}, *HELLO]},
        'messages: first message must use the "user" role',
    ),
    "two users in a row": (
        {"messages": [*HELLO, *HELLO]},
        'roles must alternate between "user" and "assistant", but found multiple "user" roles',
    ),
    "tool_use without result": (
        {"messages": [*HELLO, _assistant_uses("toolu_a", "toolu_b"), *HELLO]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: toolu_a, toolu_b",
    ),
    "tool_result not first": (
        {
            "messages": [
                *HELLO,
                _assistant_uses("toolu_a"),
                {"role": "user", "content": [{"type": "text", "text": "x"}, _result("toolu_a")]},
            ]
        },
        "messages.2: Did not find 1 tool_result block(s) at the beginning of this message",
    ),
    "unexpected tool_result": (
        {
            "messages": [
                *HELLO,
                _assistant_uses("toolu_a"),
                {"role": "user", "content": [_result("toolu_a"), _result("toolu_zzz")]},
            ]
        },
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz",
    ),
    "duplicate tool names": ({"tools": [TOOL, TOOL]}, "tools: Tool names must be unique."),
    "bad tool name": (
        {"tools": [{"name": "read file", "input_schema": {"type": "object"}}]},
        "tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
    ),
    "empty text block": (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
        "messages: text content blocks must be non-empty",
    ),
    "empty user content": (
        {"messages": [{"role": "user", "content": []}]},
        "messages.0: all messages must have non-empty content except for the optional final",
    ),
    "prefill trailing whitespace": (
        {"messages": [*HELLO, {"role": "assistant", "content": "Sure "}]},
        "final assistant content cannot end with trailing whitespace",
    ),
}


@pytest.mark.parametrize("case", INVALID)
async def test_invalid_request_is_rejected(case: str, client_for: ClientFactory) -> None:
    overrides, expected = INVALID[case]
    kwargs = {"model": MODEL, "max_tokens": 100, "messages": HELLO, **overrides}
    with MessagesServer([Turn([text("unused")])]) as server:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client_for(server).messages.create(**kwargs)
        assert server.remaining_turns == 1  # an invalid request consumes no turn
    assert expected in caught.value.message
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert [(e.status, e.type) for e in server.errors] == [(400, "invalid_request_error")]
    assert expected in server.errors[0].message


async def test_unresolved_tool_reference(client_for: ClientFactory) -> None:
    reference = [{"type": "tool_reference", "tool_name": "not_defined"}]
    messages = [
        *HELLO,
        _assistant_uses("toolu_a"),
        {"role": "user", "content": [_result("toolu_a", reference)]},
    ]
    with MessagesServer() as server, pytest.raises(anthropic.BadRequestError) as caught:
        await client_for(server).messages.create(
            model=MODEL, max_tokens=10, messages=messages, tools=[TOOL]
        )
    # What the real API answers: a 400 whose error names the code in its details (SDKs
    # that know the code raise a class of their own for it; the body is the contract).
    error = caught.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert error["details"] == {"error_code": "tool_reference_unresolved"}
    assert "not_defined" in caught.value.message
    assert len(server.errors) == 1


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"model": None}, "model: Field required"),
        ({"max_tokens": "ten"}, "max_tokens: Input should be a valid integer"),
    ],
)
async def test_required_fields(change: dict[str, Any], expected: str) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, **change}
    body = {key: value for key, value in body.items() if value is not None}
    with MessagesServer() as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            response = await http.post("/v1/messages", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == {"type": "invalid_request_error", "message": expected}
    assert server.errors[0].message == expected


# --- fault injection ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"), [(429, "rate_limit_error"), (529, "overloaded_error")]
)
async def test_injected_error_is_retried(
    status: int, error_type: str, client_for: ClientFactory
) -> None:
    with MessagesServer([Turn(status=status), Turn([text("after retry")])]) as server:
        message = await stream_final(client_for(server))
    assert message.content[0].text == "after retry"
    assert len(server.requests) == 2
    assert server.errors == []  # injected faults are intended, not errors


async def test_injected_error_body_and_headers() -> None:
    with MessagesServer([Turn(status=429)]) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            body = {"model": MODEL, "max_tokens": 10, "messages": HELLO}
            response = await http.post("/v1/messages", json=body)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "0"
    payload = response.json()
    assert payload["type"] == "error"
    assert payload["error"]["type"] == "rate_limit_error"
    assert payload["request_id"] == response.headers["request-id"]


def causes_text(error: BaseException) -> str:
    """The messages of `error` and of every error it was raised from or during: the SDK
    decides (and changes, between releases) which of them it raises itself."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


async def test_stream_cut_mid_block_raises_then_leaves_a_fragment(
    client_for: ClientFactory,
) -> None:
    turn = Turn([text("Reading."), tool_use("read", {"path": "/a/b/c.py"})], cut_mid_block=True)
    with MessagesServer([turn]) as server:
        client = client_for(server)
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            with pytest.raises(Exception) as caught:
                await stream.get_final_message()
            fragment = await stream.get_final_message()
    assert "incomplete chunked read" in causes_text(caught.value)
    assert len(server.requests) == 1  # not retried
    assert fragment.stop_reason is None
    assert fragment.content[0].type == "text" and fragment.content[0].text == "Reading."
    assert fragment.content[1].type == "tool_use" and fragment.content[1].input == {}


async def test_stream_cut_after_blocks(client_for: ClientFactory) -> None:
    turn = Turn([text("one"), text("two"), text("three")], cut_after_blocks=2)
    with MessagesServer([turn]) as server:
        client = client_for(server)
        kinds: list[str] = []
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            with pytest.raises(Exception) as caught:
                async for event in stream:
                    kinds.append(event.type)
            fragment = await stream.get_final_message()
    assert "incomplete chunked read" in causes_text(caught.value)
    assert len(server.requests) == 1  # not retried
    assert kinds.count("content_block_stop") == 2
    assert "message_stop" not in kinds
    assert [block.text for block in fragment.content if block.type == "text"] == ["one", "two"]


async def test_clean_cut_returns_fragment_without_error(client_for: ClientFactory) -> None:
    turn = Turn([text("one"), text("two")], cut_after_blocks=1, clean_cut=True)
    with MessagesServer([turn]) as server:
        fragment = await stream_final(client_for(server))
    assert fragment.stop_reason is None
    assert [block.text for block in fragment.content if block.type == "text"] == ["one"]


async def test_non_streaming_cut_is_retried(client_for: ClientFactory) -> None:
    turns = [Turn([text("lost")], cut_after_blocks=0), Turn([text("second try")])]
    with MessagesServer(turns) as server:
        message = await client_for(server).messages.create(
            model=MODEL, max_tokens=10, messages=HELLO
        )
    assert message.content[0].type == "text" and message.content[0].text == "second try"
    assert len(server.requests) == 2


async def test_block_delay_spaces_blocks(client_for: ClientFactory) -> None:
    delay, epsilon = 0.15, 0.02
    turn = Turn([text("a"), text("b"), tool_use("read", {})], block_delay=delay, delay_before=delay)
    with MessagesServer([turn]) as server:
        client = client_for(server)
        started = time.perf_counter()
        block_starts: list[float] = []
        first_event: float | None = None
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            async for event in stream:
                first_event = first_event or time.perf_counter()
                if event.type == "content_block_start":
                    block_starts.append(time.perf_counter())
    assert first_event is not None and first_event - started >= delay - epsilon
    # Lower bounds from the request only: a loaded client may read two blocks at once (a gap
    # of 0.04 s was seen), but no block can arrive before the server's pauses let it go.
    assert len(block_starts) == 3
    arrived = [at - started for at in block_starts]
    assert all(at >= delay * (k + 1) - epsilon for k, at in enumerate(arrived)), arrived


async def test_script_exhausted(client_for: ClientFactory) -> None:
    with MessagesServer([Turn([text("only one")])]) as server:
        client = client_for(server)
        await stream_final(client)
        with pytest.raises(anthropic.InternalServerError) as caught:
            await stream_final(client)
    assert "script exhausted" in caught.value.message
    assert len(server.requests) == 2  # x-should-retry: false, so no retries
    assert [(e.status, e.type) for e in server.errors] == [(500, "api_error")]
    assert "script exhausted" in server.errors[0].message


# --- construction -------------------------------------------------------------------------


def test_turn_rejects_cut_mid_block_without_tool_use() -> None:
    with pytest.raises(ValueError, match="cut_mid_block"):
        Turn([text("x")], cut_mid_block=True)


def test_base_url_needs_a_running_server() -> None:
    server = MessagesServer()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with server:
        assert server.base_url.startswith("http://127.0.0.1:")


def test_testing_package_does_not_import_anthropic() -> None:
    package = Path(__file__).parents[2] / "jupyter_toolhost" / "testing"
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            ) + ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name.split(".")[0] == "anthropic" for name in names), source
