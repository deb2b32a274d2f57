"""The loopback server's prompt cache and the API's breakpoint rules, from the outside.

Requests go over HTTP as raw JSON (what any client sends), and the cache figures come back
in the answer's usage. The clock is the server's own `clock` argument, moved by the test.
Conversations for the placement property come from hypothesis.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_toolhost.model.base import ModelRequest, Usage
from jupyter_toolhost.model.pricing import billed_equivalent
from jupyter_toolhost.model.prompt_cache import (
    LOOKBACK_BLOCKS,
    MAX_BREAKPOINTS,
    cacheable,
    min_cacheable_tokens,
)
from jupyter_toolhost.testing import MessagesServer, Turn, text, validate_request
from jupyter_toolhost.testing.prompt_cache import without_cache_marks

MARK = {"type": "ephemeral"}
LONG = "The quarterly report, line by line. " * 600  # about 5,400 tokens on the server's count


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def post(server: MessagesServer, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        server.base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)["usage"]


def refused(server: MessagesServer, body: dict[str, Any]) -> str:
    request = urllib.request.Request(
        server.base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=10)
    except urllib.error.HTTPError as error:
        assert error.code == 400
        return json.load(error)["error"]["message"]
    raise AssertionError("the request was accepted")


def body(messages: list[dict[str, Any]], *, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You answer questions about reports."}],
        "messages": messages,
    }


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def said(words: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": words, **extra}


def total(usage: dict[str, Any]) -> int:
    return (
        usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"]
    )


def test_a_written_prefix_is_read_then_expires_after_five_idle_minutes() -> None:
    clock = Clock()
    first = body([user(said(LONG, cache_control=MARK))])
    second = body([*first["messages"], {"role": "assistant", "content": [said("Noted.")]}])
    second["messages"].append(user(said("And the total?", cache_control=MARK)))
    second["messages"][0] = user(said(LONG))  # the mark moved on to the last block
    with MessagesServer([Turn([text("ok")]) for _ in range(5)], clock=clock) as server:
        wrote = post(server, first)
        assert wrote["cache_read_input_tokens"] == 0
        assert wrote["cache_creation_input_tokens"] > 5_000
        assert total(wrote) == wrote["cache_creation_input_tokens"] + wrote["input_tokens"]

        clock.now += 299  # within the lifetime: read, and the lifetime starts again
        read = post(server, second)
        assert read["cache_read_input_tokens"] == wrote["cache_creation_input_tokens"]
        assert 0 < read["cache_creation_input_tokens"] < 50  # the reply and the question
        clock.now += 299
        assert post(server, second)["cache_read_input_tokens"] == total(read) - read["input_tokens"]

        clock.now += 301  # idle past 5 minutes: gone
        cold = post(server, second)
        assert cold["cache_read_input_tokens"] == 0
        assert cold["cache_creation_input_tokens"] == total(read) - read["input_tokens"]


def test_an_hour_long_breakpoint_outlives_five_minutes() -> None:
    clock = Clock()
    first = body([user(said(LONG, cache_control={"type": "ephemeral", "ttl": "1h"}))])
    with MessagesServer([Turn([text("ok")]) for _ in range(2)], clock=clock) as server:
        wrote = post(server, first)
        clock.now += 3_000
        assert (
            post(server, first)["cache_read_input_tokens"] == (wrote["cache_creation_input_tokens"])
        )


def test_a_prefix_below_the_models_minimum_is_not_cached() -> None:
    # About 2,700 tokens: over Sonnet 4.5's 1,024, under Haiku 4.5's and Opus 4.5's 4,096.
    half = LONG[: len(LONG) // 2]
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024
    assert (
        min_cacheable_tokens("claude-haiku-4-5") == min_cacheable_tokens("claude-opus-4-5") == 4096
    )
    with MessagesServer([Turn([text("ok")]) for _ in range(4)]) as server:
        for model, cached in (("claude-haiku-4-5", False), ("claude-sonnet-4-5", True)):
            request = body([user(said(half, cache_control=MARK))], model=model)
            post(server, request)
            again = post(server, request)
            assert (again["cache_read_input_tokens"] > 0) is cached, model
            if not cached:
                assert again["cache_creation_input_tokens"] == 0
                assert again["input_tokens"] == total(again)


def test_the_cache_is_per_model_and_per_prefix() -> None:
    with MessagesServer([Turn([text("ok")]) for _ in range(3)]) as server:
        post(server, body([user(said(LONG, cache_control=MARK))]))
        other_model = post(
            server, body([user(said(LONG, cache_control=MARK))], model="claude-opus-4-1")
        )
        assert other_model["cache_read_input_tokens"] == 0
        edited = post(server, body([user(said(LONG + "!", cache_control=MARK))]))
        assert edited["cache_read_input_tokens"] == 0


def test_the_look_back_reaches_20_blocks_and_no_further() -> None:
    """The API looks for an earlier cached prefix at most 20 blocks before a breakpoint:
    a turn with more blocks than that needs the previous end marked as well."""
    first = [user(said(LONG, cache_control=MARK))]
    for added, hits, twice in (
        (LOOKBACK_BLOCKS, True, False),
        (LOOKBACK_BLOCKS + 1, False, False),
        (LOOKBACK_BLOCKS + 1, True, True),  # what the loop sends after a wide turn
    ):
        replies = [said(f"part {i}") for i in range(added - 1)]
        later = [
            user(said(LONG, **({"cache_control": MARK} if twice else {}))),
            {"role": "assistant", "content": replies},
            user(said("Next?", cache_control=MARK)),
        ]
        with MessagesServer([Turn([text("ok")]) for _ in range(2)]) as server:
            wrote = post(server, body(first))
            read = post(server, body(later))["cache_read_input_tokens"]
            assert (read == wrote["cache_creation_input_tokens"]) is hits, (added, twice)
            assert hits or read == 0


def test_the_apis_breakpoint_rules_are_enforced() -> None:
    with MessagesServer([]) as server:
        five = body([user(*(said(f"block {i}", cache_control=MARK) for i in range(5)))])
        assert refused(server, five) == (
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        )
    thought = {"type": "thinking", "thinking": "hm", "signature": "x", "cache_control": MARK}
    problem = validate_request(
        body(
            [
                user(said("hi")),
                {"role": "assistant", "content": [thought, said("ok")]},
                user(said("go")),
            ]
        )
    )
    assert problem is not None and "thinking.cache_control" in problem.message


_BLOCK = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=5)),
    st.just({"type": "thinking", "thinking": "hm", "signature": "sig"}),
    st.just({"type": "redacted_thinking", "data": "xyz"}),
    st.builds(
        lambda n: {"type": "image", "source": {"type": "url", "url": f"http://x/{n}"}},
        st.integers(0, 9),
    ),
)
_MESSAGES = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant"]),
        st.one_of(st.text(max_size=5), st.lists(_BLOCK, max_size=30)),
    ),
    max_size=8,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(conversation=_MESSAGES, used=st.integers(0, 3))
def test_marks_obey_the_rules_and_leave_the_conversation_as_it_was(
    conversation: list[tuple[str, Any]], used: int
) -> None:
    messages = [{"role": role, "content": content} for role, content in conversation]
    snapshot = json.dumps(messages)
    tools = [
        {"name": f"t{i}", "input_schema": {"type": "object"}, "cache_control": MARK}
        for i in range(used)
    ]
    request = ModelRequest(
        model="m", messages=messages, max_tokens=1, tools=tools, cache_messages=True
    )
    sent = request.to_api()["messages"]
    assert json.dumps(messages) == snapshot, "the stored conversation is never marked"
    assert without_cache_marks(sent) == [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m["content"], str) and i in request.message_breakpoints()
        else m
        for i, m in enumerate(messages)
    ]
    spots = [
        (i, j, block)
        for i, m in enumerate(sent)
        for j, block in enumerate(m["content"] if isinstance(m["content"], list) else [])
        if "cache_control" in block
    ]
    assert len(spots) + used <= MAX_BREAKPOINTS
    assert all(cacheable(block) for _, _, block in spots)
    candidates = [
        i
        for i, m in enumerate(messages)
        if any(
            cacheable(b)
            for b in (
                m["content"]
                if isinstance(m["content"], list)
                else [{"type": "text", "text": m["content"]}]
            )
        )
    ]
    if candidates and used < MAX_BREAKPOINTS:
        last = candidates[-1]
        assert spots and spots[-1][0] == last
        blocks = sent[last]["content"]
        assert all(not cacheable(b) for b in blocks[spots[-1][1] + 1 :])
    else:
        assert spots == []


HOUR = {"type": "ephemeral", "ttl": "1h"}


def client_for(server: MessagesServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_an_hour_long_write_is_billed_apart_and_a_read_keeps_its_hour() -> None:
    """Through the real client: a 1-hour write is reported in `cache_creation` (the API's
    `ephemeral_1h_input_tokens`) and `Usage` weighs it at 2 ×; read through a 5-minute mark
    after 50 minutes, the entry keeps living an hour from that read."""
    clock = Clock()
    stable = user(said(LONG, cache_control=HOUR))
    with MessagesServer([Turn([text("ok")]) for _ in range(4)], clock=clock) as server:
        client = client_for(server)
        first = client.messages.create(**body([stable]))
        wrote = Usage.from_dict(first.usage.model_dump())
        assert first.usage.cache_creation is not None
        assert (
            first.usage.cache_creation.ephemeral_1h_input_tokens
            == wrote.cache_creation_1h_input_tokens
        )
        assert wrote.cache_creation_1h_input_tokens == wrote.cache_creation_input_tokens > 5_000
        assert (
            billed_equivalent(wrote) == wrote.input_tokens + 2 * wrote.cache_creation_input_tokens
        )

        clock.now += 3_000  # 50 minutes: a 5-minute entry would be long gone
        later = body([user(said(LONG)), {"role": "assistant", "content": [said("Noted.")]}])
        later["messages"].append(user(said("And the total?", cache_control=MARK)))
        read = Usage.from_dict(client.messages.create(**later).usage.model_dump())
        assert read.cache_read_input_tokens == wrote.cache_creation_input_tokens  # looked back
        assert read.cache_creation_1h_input_tokens == 0  # the new tail is a 5-minute write
        assert 0 < read.cache_creation_input_tokens < 50

        clock.now += 3_000  # 50 more minutes: alive, since the read gave it another hour
        again = Usage.from_dict(client.messages.create(**body([stable])).usage.model_dump())
        assert again.cache_read_input_tokens == wrote.cache_creation_input_tokens
        clock.now += 3_601  # idle past the hour: gone
        cold = Usage.from_dict(client.messages.create(**body([stable])).usage.model_dump())
        assert cold.cache_read_input_tokens == 0


def test_mixed_lifetimes_are_billed_as_the_api_bills_them() -> None:
    """A = read, B = the last 1-hour mark written, C = the last mark written: B − A are
    1-hour writes, C − B 5-minute ones."""
    clock = Clock()
    part = "A paragraph of the report. " * 400  # about 2,700 tokens
    first = user(said(part, cache_control=HOUR))
    second = user(
        said(part), said(part + "2", cache_control=HOUR), said(part + "3", cache_control=MARK)
    )
    with MessagesServer([Turn([text("ok")]) for _ in range(2)], clock=clock) as server:
        client = client_for(server)
        a = Usage.from_dict(client.messages.create(**body([first])).usage.model_dump())
        mixed = Usage.from_dict(client.messages.create(**body([second])).usage.model_dump())
    assert mixed.cache_read_input_tokens == a.cache_creation_input_tokens
    long, short = mixed.cache_creation_1h_input_tokens, mixed.cache_creation_input_tokens
    assert 2_600 < long < 2_800 and 2_600 < short - long < 2_800
    assert billed_equivalent(mixed) == pytest.approx(
        mixed.input_tokens + 2 * long + 1.25 * (short - long) + 0.1 * mixed.cache_read_input_tokens
    )


def test_an_hour_long_mark_after_a_five_minute_one_is_refused_as_the_api_does() -> None:
    five_then_hour = body([user(said("One.", cache_control=MARK), said(LONG, cache_control=HOUR))])
    tools_after = body([user(said(LONG, cache_control=HOUR))])
    tools_after["system"] = [said("You answer questions.", cache_control=MARK)]
    # The order is the request's: tools, system, messages.
    hour_tool = {"name": "look", "description": "Look.", "input_schema": {"type": "object"}}
    tools_after["tools"] = [{**hour_tool, "cache_control": HOUR}]
    bad_ttl = body([user(said(LONG, cache_control={"type": "ephemeral", "ttl": "2h"}))])
    with MessagesServer([Turn([text("ok")]) for _ in range(3)]) as server:
        client = client_for(server)
        for request in (five_then_hour, tools_after):
            with pytest.raises(anthropic.BadRequestError, match=r"ttl='1h'.*must not come after"):
                client.messages.create(**request)
        assert "ttl" in refused(server, bad_ttl)
        fine = body([user(said("One.", cache_control=HOUR), said(LONG, cache_control=MARK))])
        assert client.messages.create(**fine).usage.cache_creation_input_tokens > 5_000
