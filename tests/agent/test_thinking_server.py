"""The loopback server's extended thinking, as the Messages API does it, through the real
`anthropic` client: scripted thinking streams and is signed; a request whose thinking
blocks were dropped, moved or changed gets the API's 400; so does a malformed `thinking`
object. Also the options' own checks in `Session`, and the pure helpers behind them.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anthropic
import pytest

from jupyter_toolhost import Session
from jupyter_toolhost.agent.events import Notice
from jupyter_toolhost.core.conversation import repair, storable
from jupyter_toolhost.model.anthropic_model import AnthropicModel, tls_context
from jupyter_toolhost.model.base import ModelAPIError, ModelRequest, Usage
from jupyter_toolhost.model.pricing import estimate_cost
from jupyter_toolhost.model.thinking import (
    ThinkingConfigError,
    check_context_management,
    check_thinking,
    drop_settled_thinking,
    request_max_tokens,
)
from jupyter_toolhost.testing import (
    MessagesServer,
    Turn,
    redacted_thinking,
    text,
    thinking,
    tool_use,
)

MODEL = "claude-sonnet-4-5"
THINK = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [{"name": "Echo", "input_schema": {"type": "object", "properties": {}}}]
CHAIN_RULE = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block"
)


def client(server: MessagesServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=server.base_url,
        api_key="test-key",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=tls_context()),  # (made once: 35 ms)
    )


def ask(server: MessagesServer, messages: list[dict[str, Any]], **body: Any) -> Any:
    body.setdefault("thinking", THINK)
    body.setdefault("max_tokens", 4096)
    create: Any = client(server).messages.create
    return create(model=MODEL, messages=messages, tools=TOOLS, **body)


def refused(server: MessagesServer, messages: list[dict[str, Any]], **body: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(server, messages, **body)
    return str(caught.value.body["error"]["message"])  # type: ignore[index]


@pytest.fixture
def chain() -> Iterator[tuple[MessagesServer, list[dict[str, Any]]]]:
    """A server and a real conversation from it: thinking, a tool call, its result."""
    script = [Turn([thinking("Call Echo."), tool_use("Echo", {})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        first = ask(server, [{"role": "user", "content": "go"}])
        assistant = {"role": "assistant", "content": [b.model_dump() for b in first.content]}
        result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "done"}
        yield (
            server,
            [
                {"role": "user", "content": "go"},
                assistant,
                {"role": "user", "content": [result]},
            ],
        )


def stream_once(server: MessagesServer, thinking_option: dict[str, Any]) -> tuple[list[Any], Any]:
    """One streamed request through the real client: its events and final message."""
    with client(server).messages.stream(
        model=MODEL,
        max_tokens=4096,
        thinking=cast(Any, thinking_option),
        messages=[{"role": "user", "content": "q"}],
    ) as stream:
        return list(stream), stream.get_final_message()


def test_thinking_streams_with_its_signature_and_counts_its_tokens() -> None:
    script = [Turn([redacted_thinking(), thinking("Step one. Step two."), text("Answer.")])]
    with MessagesServer(script) as server:
        events, final = stream_once(server, THINK)

    assert server.errors == []
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert deltas.count("thinking_delta") == 3 and deltas.count("signature_delta") == 1
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["redacted_thinking", "thinking", "text"]
    redacted, thought, answer = final.content
    assert thought.type == "thinking" and thought.thinking == "Step one. Step two."
    assert server.signer.valid_signature(thought.thinking, thought.signature)
    assert redacted.type == "redacted_thinking" and server.signer.valid_data(redacted.data)
    assert answer.type == "text"
    details = final.usage.output_tokens_details
    assert details is not None and 0 < details.thinking_tokens <= final.usage.output_tokens
    usage = Usage.from_dict(final.usage.model_dump(mode="json"))
    assert usage.thinking_tokens == details.thinking_tokens


def test_display_omitted_sends_only_the_signature() -> None:
    hidden = {**THINK, "display": "omitted"}
    with MessagesServer([Turn([thinking("hidden thought"), text("a")])]) as server:
        events, final = stream_once(server, hidden)

    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert "thinking_delta" not in deltas and "signature_delta" in deltas
    thought = final.content[0]
    assert thought.type == "thinking" and thought.thinking == "" and thought.signature
    assert final.usage.output_tokens_details is not None
    assert final.usage.output_tokens_details.thinking_tokens == len("hidden thought") // 4


def test_the_untouched_chain_is_accepted(chain: Any) -> None:
    server, messages = chain
    assert ask(server, messages).content[0].text == "ok"
    assert server.errors == []


def test_a_chain_without_its_thinking_block_is_refused(chain: Any) -> None:
    server, messages = chain
    messages[1]["content"] = messages[1]["content"][1:]
    message = refused(server, messages)
    assert message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. " + CHAIN_RULE
    )
    # Without thinking the same conversation is fine.
    assert ask(server, messages, thinking={"type": "disabled"}).content[0].text == "ok"


@pytest.mark.parametrize(
    ("change", "wording"),
    [
        (lambda b: b.update(signature=b["signature"][:-4] + "AAA="), "Invalid `signature`"),
        (lambda b: b.update(thinking=b["thinking"] + " (edited)"), "Invalid `signature`"),
        (lambda b: b.update(signature="not base64!"), "Invalid `signature`"),
        (lambda b: b.pop("signature"), "messages.1.content.0.thinking.signature: Field required"),
    ],
    ids=["signature", "text", "garbage", "missing"],
)
def test_a_changed_thinking_block_is_refused(chain: Any, change: Any, wording: str) -> None:
    server, messages = chain
    change(messages[1]["content"][0])
    message = refused(server, messages)
    assert wording in message
    if "Invalid" in wording:
        assert message == "messages.1.content.0: Invalid `signature` in `thinking` block"


@pytest.mark.parametrize(
    ("field", "value", "wording"),
    [
        (
            "signature",
            12345,
            "messages.1.content.0.thinking.signature: Input should be a valid string",
        ),
        (
            "thinking",
            ["a"],
            "messages.1.content.0.thinking.thinking: Input should be a valid string",
        ),
        ("signature", "", "Invalid `signature` in `thinking` block"),
    ],
)
def test_hostile_block_values_get_a_400_not_a_crash(
    chain: Any, field: str, value: Any, wording: str
) -> None:
    server, messages = chain
    messages[1]["content"][0][field] = value
    assert wording in refused(server, messages)
    assert [e.status for e in server.errors] == [400]


def test_a_lone_surrogate_in_a_thought_is_refused_not_a_crash(chain: Any) -> None:
    server, messages = chain
    messages[1]["content"][0]["thinking"] = "lone \ud800"  # JSON can carry it; UTF-8 cannot
    body = {"model": MODEL, "max_tokens": 4096, "thinking": THINK, "messages": messages}
    request = urllib.request.Request(
        server.base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert "Invalid `signature` in `thinking` block" in caught.value.read().decode()


def test_a_block_signed_by_another_server_is_refused(chain: Any) -> None:
    _, messages = chain
    with MessagesServer([Turn([text("x")])]) as other:
        message = refused(other, messages)
    assert message == "messages.1.content.0: Invalid `signature` in `thinking` block"
    assert other.errors[0].status == 400


def test_a_moved_thinking_block_is_refused(chain: Any) -> None:
    server, messages = chain
    messages[1]["content"].reverse()
    message = refused(server, messages)
    assert message.startswith("messages.1.content.0: If an assistant message contains any")
    assert message.endswith("Found tool_use.")


def test_thinking_after_text_in_a_settled_turn_is_refused(chain: Any) -> None:
    server, messages = chain
    settled = [
        {"role": "user", "content": "before"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}, messages[1]["content"][0]],
        },
    ]
    message = refused(server, [*settled, *messages])
    assert message == (
        "messages.1.content.0: If an assistant message contains any thinking blocks, the "
        "first block must be thinking or redacted_thinking. Found text."
    )


def test_changed_redacted_data_is_refused() -> None:
    script = [Turn([redacted_thinking("sealed"), tool_use("Echo", {})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        first = ask(server, [{"role": "user", "content": "go"}])
        blocks = [b.model_dump() for b in first.content]
        result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "done"}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [result]},
        ]
        tampered = copy.deepcopy(messages)
        tampered[1]["content"][0]["data"] = blocks[0]["data"][:-8] + "AAAAAAA="
        assert refused(server, tampered) == (
            "messages.1.content.0: Invalid `data` in `redacted_thinking` block"
        )
        assert ask(server, messages).content[0].text == "ok"  # a redacted block starts a chain


def test_a_final_assistant_message_may_not_end_on_thinking(chain: Any) -> None:
    server, messages = chain
    prefill = [messages[0], {"role": "assistant", "content": [messages[1]["content"][0]]}]
    assert refused(server, prefill) == (
        "messages.1: The final block in an assistant message cannot be `thinking`."
    )
    assert refused(server, prefill, thinking={"type": "disabled"}).startswith(
        "messages.1.content.0: When thinking is disabled, an `assistant` message in the final "
        "position cannot contain `thinking`."
    )


@pytest.mark.parametrize(
    ("thinking_option", "max_tokens", "wording"),
    [
        (
            {"type": "enabled", "budget_tokens": 512},
            4096,
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            {"type": "enabled", "budget_tokens": 4096},
            4096,
            "`max_tokens` must be greater than `thinking.budget_tokens`.",
        ),
        ({"type": "enabled"}, 4096, "thinking.enabled.budget_tokens: Field required"),
        ({"type": "on"}, 4096, "thinking: Input tag 'on' found using 'type'"),
        (
            {"type": "enabled", "budget_tokens": 2048, "display": "full"},
            4096,
            "thinking.enabled.display: Input should be 'summarized' or 'omitted'",
        ),
    ],
    ids=["small-budget", "budget-at-max", "no-budget", "unknown-type", "bad-display"],
)
def test_a_malformed_thinking_object_is_refused(
    thinking_option: dict[str, Any], max_tokens: int, wording: str
) -> None:
    with MessagesServer([Turn([text("never")])]) as server:
        message = refused(
            server,
            [{"role": "user", "content": "q"}],
            thinking=thinking_option,
            max_tokens=max_tokens,
        )
        assert message.startswith(wording)
        assert server.remaining_turns == 1  # a refused request consumes no turn


def test_context_management_needs_its_beta_header() -> None:
    edits = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    with MessagesServer([Turn([text("ok")])]) as server:
        message = refused(
            server, [{"role": "user", "content": "q"}], extra_body={"context_management": edits}
        )
        assert message == "context_management: Extra inputs are not permitted"
        reply = ask(
            server,
            [{"role": "user", "content": "q"}],
            extra_body={"context_management": edits},
            extra_headers={"anthropic-beta": "context-management-2025-06-27"},
        )
        assert reply.content[0].text == "ok"
        message = refused(
            server,
            [{"role": "user", "content": "q"}],
            thinking={"type": "disabled"},
            extra_body={"context_management": edits},
            extra_headers={"anthropic-beta": "context-management-2025-06-27"},
        )
        assert message == "`clear_thinking_20251015` strategy requires `thinking` to be enabled"


def test_a_script_that_thinks_unasked_is_a_script_error() -> None:
    with (
        MessagesServer([Turn([thinking("uninvited"), text("x")])]) as server,
        pytest.raises(anthropic.InternalServerError),
    ):
        client(server).messages.create(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "q"}]
        )
    assert "did not turn thinking on" in server.errors[0].message


async def test_a_loop_that_dropped_its_thinking_is_refused_with_the_api_wording(
    tmp_path: Path,
) -> None:
    """A broken loop (the chain's thinking block dropped, the request still asking for
    thinking) is refused with the API's 400; this project's loop, handed the same hand-edited
    conversation, sends that request without thinking instead, and the server accepts it."""
    script = [Turn([thinking("Plan."), tool_use("Echo", {})]), Turn([text("answered")])]
    with MessagesServer(script) as server:
        session = Session(
            tools=[],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key", max_retries=0),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            thinking=THINK,
            max_turns=1,
        )
        await session.run("go")  # stops after one turn: the chain is open
        assert session.messages[-1]["role"] == "user"
        # A careless edit by hand: the thinking block is dropped from the chain.
        chain = session.messages[1]
        session.messages[1] = {**chain, "content": chain["content"][1:]}
        first = server.requests[0].body
        broken = ModelRequest(
            model=MODEL,
            messages=list(session.messages),
            max_tokens=first["max_tokens"],
            tools=first.get("tools", ()),
            thinking=THINK,
        )
        with pytest.raises(ModelAPIError) as caught:
            async for _ in session.model.stream(broken):
                pass
        assert caught.value.status == 400
        wording = "Expected `thinking` or `redacted_thinking`, but found `tool_use`"
        assert wording in str(caught.value)
        assert server.errors[-1].status == 400 and CHAIN_RULE in server.errors[-1].message
        assert server.remaining_turns == 1

        session.settings.max_turns = 5
        notices: list[str] = []
        result = await session.run(
            "", on_event=lambda e: notices.append(e.text) if isinstance(e, Notice) else None
        )
    assert result == "answered"
    assert "thinking" not in server.requests[-1].body
    assert any("Thinking resumes after this answer" in n for n in notices), notices
    assert len(server.errors) == 1


# ── the options, checked when the session is made ─────────────────────────────────────


@pytest.mark.parametrize(
    ("options", "wording"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 1023}}, "greater than or equal to 1024"),
        ({"thinking": {"type": "enabled", "budget_tokens": "2048"}}, "valid integer"),
        ({"thinking": {"type": "enabled", "budget_tokens": True}}, "valid integer"),
        ({"thinking": {"type": "thinking"}}, "Input tag 'thinking'"),
        ({"thinking": {"budget_tokens": 2048}}, "thinking.type: Field required"),
        ({"thinking": "enabled"}, "thinking: Input should be a valid dictionary"),
        (
            {"thinking": {"type": "disabled", "budget_tokens": 2048}},
            "thinking.disabled.budget_tokens: Extra inputs are not permitted",
        ),
        (
            {"context_management": {"edits": [{"type": "clear_thinking_20251015"}]}},
            "`clear_thinking_20251015` strategy requires `thinking` to be enabled",
        ),
        (
            {
                "thinking": THINK,
                "context_management": {
                    "edits": [
                        {"type": "clear_tool_uses_20250919"},
                        {"type": "clear_thinking_20251015"},
                    ]
                },
            },
            "must be the first strategy",
        ),
        (
            {"thinking": THINK, "context_management": {"edits": [{"type": "compact_20260112"}]}},
            "Input tag 'compact_20260112'",
        ),
        ({"context_management": {"edit": []}}, "context_management.edit: Extra inputs"),
    ],
)
def test_session_refuses_malformed_options_when_made(
    tmp_path: Path, options: dict[str, Any], wording: str
) -> None:
    with pytest.raises(ValueError, match=r"^Session: ") as caught:
        Session(tools=[], model=MODEL, cwd=tmp_path, load_settings=False, **options)
    assert wording in str(caught.value)
    assert isinstance(caught.value, ThinkingConfigError)


def test_options_are_sent_as_given_and_copied(tmp_path: Path) -> None:
    mine = {"type": "adaptive", "display": "summarized"}
    session = Session(tools=[], model=MODEL, cwd=tmp_path, load_settings=False, thinking=mine)
    mine["type"] = "broken"  # a later change by the caller does not reach the session
    assert session.settings.thinking == {"type": "adaptive", "display": "summarized"}
    assert request_max_tokens(8192, session.settings.thinking) == 8192  # no budget: no change
    assert request_max_tokens(8192, {"type": "enabled", "budget_tokens": 31999}) == 40191
    assert check_thinking(None) is None and check_context_management(None, None) is None


# ── usage and cost ────────────────────────────────────────────────────────────────────


def test_usage_sums_thinking_tokens_and_keeps_old_records_as_they_were() -> None:
    api = {
        "input_tokens": 10,
        "output_tokens": 50,
        "output_tokens_details": {"thinking_tokens": 30},
    }
    usage = Usage.from_dict(api)
    assert usage.thinking_tokens == 30
    assert Usage.from_dict(usage.to_dict()) == usage
    assert (usage + usage).thinking_tokens == 60
    plain = Usage(1, 2, 3, 4)
    assert plain.to_dict() == {
        "input_tokens": 1,
        "output_tokens": 2,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 4,
    }
    assert Usage.from_dict({"output_tokens_details": None}).thinking_tokens == 0
    # Billed once, as the output tokens they are part of.
    assert estimate_cost(MODEL, usage) == estimate_cost(MODEL, Usage(10, 50))


# ── which blocks a conversation keeps ─────────────────────────────────────────────────


def _think(label: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": label, "signature": f"sig-{label}"}


def test_storage_and_repair_never_touch_thinking_blocks() -> None:
    omitted = {"type": "thinking", "thinking": "", "signature": "sig"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    blocks = [
        redacted,
        omitted,
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "t1", "name": "Echo", "input": {}},
    ]
    assert storable(blocks) == [redacted, omitted, blocks[3]]
    conversation = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [redacted, omitted, blocks[3]]},
    ]
    repaired = repair(conversation)
    assert repaired[1]["content"] == [redacted, omitted, blocks[3]]
    assert repaired[2]["content"][0]["tool_use_id"] == "t1"


def test_settled_thoughts_go_and_the_open_chain_keeps_its_own() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "Echo", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    settled = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [_think("a"), {"type": "text", "text": "A"}]},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": [_think("b")]},  # a thought alone (an old file)
        {"role": "user", "content": "three"},
    ]
    assert drop_settled_thinking(settled) == [
        {"role": "user", "content": [{"type": "text", "text": "one"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "three"}],
        },
    ]
    open_chain = [
        *settled[:2],
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_think("c"), use]},
        {"role": "user", "content": [result, {"type": "text", "text": "after interrupt"}]},
    ]
    kept = drop_settled_thinking(open_chain)
    assert kept[1]["content"] == [{"type": "text", "text": "A"}]
    assert kept[3]["content"] == [_think("c"), use]
    assert kept[4]["content"] == [result, {"type": "text", "text": "after interrupt"}]


def test_every_problem_of_an_option_is_named_at_once() -> None:
    """One refusal lists each problem where it is, so one edit fixes the option."""
    with pytest.raises(ThinkingConfigError) as caught:
        check_thinking({"type": "enabled", "budget_tokens": 10, "display": "full", "extra": 1})
    assert str(caught.value).split("; ") == [
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        "thinking.enabled.display: Input should be 'summarized' or 'omitted'",
        "thinking.enabled.extra: Extra inputs are not permitted",
    ]
    with pytest.raises(ThinkingConfigError) as caught:
        check_thinking({"type": None, "budget_tokens": 2048})
    assert str(caught.value) == "thinking.type: Field required"
    with pytest.raises(ThinkingConfigError) as caught:
        check_context_management({"edits": [5, {"keep": "all"}]}, THINK)
    assert str(caught.value).split("; ") == [
        "context_management.edits.0: Input should be a valid dictionary",
        "context_management.edits.1.type: Field required",
    ]
    with pytest.raises(ThinkingConfigError, match=r"^context_management.edits: .*valid list"):
        check_context_management({"edits": ({"type": "clear_tool_uses_20250919"},)}, THINK)
