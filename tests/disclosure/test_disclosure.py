"""Deferred disclosure across a conversation: what each request's `tools` array carries.

ToolSearch runs through the real `Pipeline`; the request bodies are checked by the loopback
server's validator (a `tool_reference` must name a tool defined in `tools`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.agent.compaction import CompactBoundary
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.disclosure import (
    PLACEHOLDER_NAME,
    DisclosureState,
    compact_metadata,
    extract_discovered_tool_names,
    is_tool_search_enabled,
    tools_for_request,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.testing.validation import validate_request
from jupyter_toolhost.tools.tool_search import TOOL as TOOL_SEARCH
from jupyter_toolhost.tools.tool_search import with_tool_search


class Empty(BaseModel):
    pass


def make(name: str, description: str, **flags: Any) -> Tool[Any]:
    return build_tool(
        name=name, input_model=Empty, call=lambda _i, _c: "ok", description=description, **flags
    )


READ = make("Read", "Read a file from disk.", read_only=True)
WEATHER = make(
    "mcp__weather__get_forecast",
    "Get the weather forecast (temperature, rain, wind) for a city.",
    should_defer=True,
    is_mcp=True,
)
CHAT = make("mcp__chat__post_message", "Send a message to a team chat channel.", should_defer=True)
PINNED = make(
    "mcp__chat__list_channels",
    "List the channels of the chat workspace.",
    should_defer=True,
    always_load=True,
)


def names(request: Any) -> list[str]:
    return [definition["name"] for definition in request.api_tools]


async def run_tool_search(
    tmp_path: Path, pool: list[Tool[Any]], query: str, call_id: str = "toolu_search"
) -> dict[str, Any]:
    context = ToolUseContext(options=ToolUseOptions(tools=pool), cwd=tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path / "results"))
    call = ToolCall(id=call_id, name="ToolSearch", input={"query": query})
    result = await pipeline.run(call, context)
    assert not result.is_error, result.content
    return result.to_block()


def body(request: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "messages": messages,
        "tools": request.api_tools,
    }


async def test_deferred_tool_is_found_then_loaded_and_survives_compaction(tmp_path: Path) -> None:
    pool = with_tool_search([READ, WEATHER, CHAT])
    state = DisclosureState()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Will it rain in Oslo?"}]

    first = tools_for_request(pool, messages, state=state)
    assert names(first) == ["Read", "ToolSearch"]
    assert set(first.deferred_names) == {WEATHER.name, CHAT.name}
    assert first.attachment is not None
    assert WEATHER.name in first.attachment and CHAT.name in first.attachment
    assert validate_request(body(first, messages)) is None

    result = await run_tool_search(tmp_path, pool, "weather forecast rain")
    references = [b["tool_name"] for b in result["content"] if b["type"] == "tool_reference"]
    assert references[0] == WEATHER.name
    messages += [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_search", "name": "ToolSearch", "input": {}}
            ],
        },
        {"role": "user", "content": [result]},
    ]

    # Sending the reference without the tool defined is what the API rejects.
    assert validate_request(body(first, messages)) is not None
    second = tools_for_request(pool, messages, state=state)
    assert names(second) == ["Read", "ToolSearch", WEATHER.name]
    assert second.attachment is None, "nothing changed, so nothing is announced again"
    assert WEATHER in second.loaded
    assert validate_request(body(second, messages)) is None
    assert json.dumps(tools_for_request(pool, messages, state=state).api_tools) == json.dumps(
        second.api_tools
    ), "the same conversation gives byte-identical tools (prompt caching)"

    # Compaction replaces the history; the boundary carries the discovered names.
    boundary = CompactBoundary(
        trigger="auto",
        pre_tokens=0,
        messages_summarised=len(messages),
        pre_compact_discovered_tools=tuple(
            compact_metadata(messages)["pre_compact_discovered_tools"]
        ),
        summary="The user asked about rain in Oslo.",
    )
    compacted = [{"role": "user", "content": "Summary: the user asked about rain in Oslo."}]
    assert WEATHER.name not in names(tools_for_request(pool, compacted))
    after = tools_for_request(pool, compacted, compact_boundaries=[boundary])
    assert WEATHER.name in names(after)
    record = boundary.to_record(compacted)
    assert WEATHER.name in names(tools_for_request(pool, [record, *compacted]))


def test_always_load_wins_and_tool_search_only_with_deferred_tools() -> None:
    pool = with_tool_search([READ, PINNED])
    request = tools_for_request(pool, [])
    assert names(request) == ["Read", PINNED.name]
    assert request.attachment is None and request.deferred_names == ()
    assert not is_tool_search_enabled(pool)
    assert TOOL_SEARCH not in with_tool_search([READ, PINNED])

    with_deferred = [TOOL_SEARCH, READ, PINNED, CHAT]
    assert is_tool_search_enabled(with_deferred)
    assert names(tools_for_request(with_deferred, [])) == [
        "ToolSearch",
        "Read",
        PINNED.name,
    ]


def test_delta_attachment_when_a_server_connects_and_leaves() -> None:
    state = DisclosureState()
    pool = with_tool_search([READ, CHAT])
    first = tools_for_request(pool, [], state=state)
    assert first.attachment is not None and CHAT.name in first.attachment

    calendar = [
        make("mcp__calendar__create_event", "Schedule a meeting.", should_defer=True),
        make("mcp__calendar__list_events", "List events of a day.", should_defer=True),
    ]
    grown = tools_for_request([*pool, *calendar], [], state=state)
    assert grown.attachment is not None
    assert all(tool.name in grown.attachment for tool in calendar)
    assert CHAT.name not in grown.attachment, "only the change is announced"
    assert tools_for_request([*pool, *calendar], [], state=state).attachment is None

    shrunk = tools_for_request(pool, [], state=state)
    assert shrunk.attachment is not None and "no longer available" in shrunk.attachment
    assert calendar[0].name in shrunk.attachment and CHAT.name not in shrunk.attachment

    state.reset()
    again = tools_for_request(pool, [], state=state)
    assert again.attachment is not None and CHAT.name in again.attachment


def test_defer_loading_style_sends_found_tools_marked_and_a_placeholder() -> None:
    pool = with_tool_search([READ, WEATHER, PINNED])
    request = tools_for_request(pool, [], style="defer_loading")
    assert names(request) == ["Read", PINNED.name, "ToolSearch", PLACEHOLDER_NAME]
    assert request.api_tools[-1]["defer_loading"] is True
    assert validate_request(body(request, [{"role": "user", "content": "hi"}])) is None

    found = [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": WEATHER.name}],
                }
            ],
        }
    ]
    state = DisclosureState()
    after = tools_for_request(pool, found, style="defer_loading", state=state)
    by_name = {d["name"]: d for d in after.api_tools}
    assert list(by_name) == ["Read", PINNED.name, "ToolSearch", WEATHER.name, PLACEHOLDER_NAME]
    assert by_name[WEATHER.name]["defer_loading"] is True
    assert "defer_loading" not in by_name["Read"]
    assert "defer_loading" not in by_name[PINNED.name]
    assert WEATHER not in after.loaded, "the API loads it where the reference stands"

    # A vanished tool that is still referenced keeps its flag too.
    gone = tools_for_request([READ, PINNED, TOOL_SEARCH], found, style="defer_loading", state=state)
    assert {"defer_loading": True}.items() <= {d["name"]: d for d in gone.api_tools}[
        WEATHER.name
    ].items()

    server = tools_for_request(pool, [], style="defer_loading", server_search="bm25")
    assert "ToolSearch" not in [d.get("name") for d in server.api_tools]
    assert PLACEHOLDER_NAME not in [d.get("name") for d in server.api_tools]
    assert WEATHER.name in [d.get("name") for d in server.api_tools], "the API searches these"
    assert server.api_tools[-1] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert server.attachment is not None and "tool_search_tool_bm25" in server.attachment
    with pytest.raises(ValueError, match="defer_loading"):
        tools_for_request(pool, [], server_search="regex")


def test_validator_refuses_what_the_api_refuses_about_deferral() -> None:
    messages = [{"role": "user", "content": "hi"}]
    deferred = {"name": "a", "input_schema": {"type": "object"}, "defer_loading": True}
    loaded = {"name": "b", "input_schema": {"type": "object"}}
    problem = validate_request({**body_of([deferred]), "messages": messages})
    assert problem is not None and "At least one tool must be non-deferred" in str(problem)
    problem = validate_request(
        {**body_of([loaded, {**deferred, "defer_loading": "yes"}]), "messages": messages}
    )
    assert problem is not None and "defer_loading: Input should be a valid boolean" in str(problem)
    problem = validate_request(
        {
            **body_of([loaded, {"type": "tool_search_tool_fuzzy_1", "name": "s"}]),
            "messages": messages,
        }
    )
    assert problem is not None and "tool_search_tool_bm25_20251119" in str(problem)
    assert validate_request({**body_of([loaded, deferred]), "messages": messages}) is None


def body_of(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 10, "tools": tools}


def test_server_search_results_count_as_discoveries() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "weather"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "W"}],
                    },
                },
            ],
        }
    ]
    assert extract_discovered_tool_names(messages) == {"W"}


def test_a_vanished_discovered_tool_stays_defined_while_referenced() -> None:
    state = DisclosureState()
    messages = [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": WEATHER.name}],
                }
            ],
        }
    ]
    pool = with_tool_search([READ, WEATHER])
    assert WEATHER.name in names(tools_for_request(pool, messages, state=state))
    gone = tools_for_request([READ], messages, state=state)
    assert WEATHER.name in names(gone), "its last definition is still sent"
    assert WEATHER not in gone.loaded


def test_extract_discovered_tool_names_reads_every_carrier() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "plain text"},
        {
            "type": "system",
            "subtype": "compact_boundary",
            "compactMetadata": {"preCompactDiscoveredTools": ["A"]},
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "x",
                    "content": [
                        {"type": "text", "text": "tool_reference B"},
                        {"type": "tool_reference", "tool_name": "C"},
                        {"type": "tool_reference"},
                    ],
                },
                {"type": "tool_result", "tool_use_id": "y", "content": "D"},
            ],
        },
    ]
    found = extract_discovered_tool_names(messages, [{"pre_compact_discovered_tools": ["E"]}])
    assert found == {"A", "C", "E"}
