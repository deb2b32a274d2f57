"""The two disclosure styles end to end through `Session`, against the loopback server.

The server validates what the API validates about deferral (a `tool_reference` must name a
tool in `tools`; not every tool may be deferred; `defer_loading` is a boolean) and refuses
a scripted call to a deferred tool that no reference has loaded, so every conversation
here is one the real model could have had. `api_view.cached_prefix` is the system prompt
plus every tool without `defer_loading`: what a prompt-cache hit needs unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.disclosure import PLACEHOLDER_NAME, resolve_disclosure
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.cassette import CassetteModel
from jupyter_toolhost.testing import MessagesServer, Turn, raw, text, tool_use
from jupyter_toolhost.testing.api_view import cached_prefix, visible_tool_names
from jupyter_toolhost.testing.prompt_cache import without_cache_marks

MODEL = "claude-sonnet-4-5"


class CityInput(BaseModel):
    city: str


class PostInput(BaseModel):
    channel: str
    text: str


def forecast(input: CityInput, context: ToolUseContext) -> str:
    return f"rain in {input.city}"


def post(input: PostInput, context: ToolUseContext) -> str:
    return f"posted to {input.channel}"


def pool() -> list[Tool[Any]]:
    notes = build_tool(
        name="Notes",
        input_model=CityInput,
        call=lambda i, c: f"no notes on {i.city}",
        description="Read the user's notes about a city.",
        read_only=True,
    )
    weather = build_tool(
        name="mcp__weather__get_forecast",
        input_model=CityInput,
        call=forecast,
        description="Get the weather forecast (temperature, rain, wind) for a city.",
        should_defer=True,
        is_mcp=True,
        read_only=True,
    )
    chat = build_tool(
        name="mcp__chat__post_message",
        input_model=PostInput,
        call=post,
        description="Send a message to a team chat channel.",
        should_defer=True,
        is_mcp=True,
    )
    return [notes, weather, chat]


DEFERRED = {"mcp__weather__get_forecast", "mcp__chat__post_message"}
WEATHER = "mcp__weather__get_forecast"


def session_for(server: MessagesServer, tmp_path: Path, **options: Any) -> Session:
    options.setdefault("permission_mode", "bypassPermissions")
    return Session(
        tools=pool(),
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=tmp_path,
        load_settings=False,
        **options,
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def deferred_definitions(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in body.get("tools", []) if t.get("name") in DEFERRED]


def results_of(body: dict[str, Any]) -> list[str]:
    """The text of each tool_result in the request's last message."""
    found = []
    for block in body["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            found.append(json.dumps(block["content"]))
    return found


DISCOVER_AND_CALL = [
    Turn([tool_use("ToolSearch", {"query": "weather forecast rain"})]),
    Turn([tool_use(WEATHER, {"city": "Oslo"})]),
    Turn([text("It will rain in Oslo.")]),
]


async def test_defer_loading_keeps_the_cached_prefix_across_a_discovery(tmp_path: Path) -> None:
    with MessagesServer(DISCOVER_AND_CALL) as server:
        session = session_for(server, tmp_path)
        assert await session.run("Will it rain in Oslo?") == "It will rain in Oslo."
    assert server.errors == []
    before, after, last = bodies(server)

    # The system prompt and every tool without defer_loading: byte-identical.
    assert cached_prefix(before) == cached_prefix(after) == cached_prefix(last)
    # ... and the history only grows, so the messages before are a prefix too.
    assert without_cache_marks(after["messages"][: len(before["messages"])]) == (
        without_cache_marks(before["messages"])
    )
    assert WEATHER not in visible_tool_names(before)
    assert WEATHER in visible_tool_names(after)
    assert [t["name"] for t in before["tools"]][-1] == PLACEHOLDER_NAME
    # The cache breakpoint sits on the last tool of the prefix, never on a deferred one.
    marked = [t["name"] for t in after["tools"] if "cache_control" in t]
    assert marked == ["ToolSearch"]
    assert any("rain in Oslo" in r for r in results_of(last))


async def test_a_found_tool_is_never_sent_without_defer_loading(tmp_path: Path) -> None:
    script = [
        *DISCOVER_AND_CALL,
        Turn([tool_use("ToolSearch", {"query": "select:mcp__chat__post_message"})]),
        Turn([tool_use("mcp__chat__post_message", {"channel": "ops", "text": "rain"})]),
        Turn([tool_use(WEATHER, {"city": "Bergen"})]),
        Turn([text("Told ops.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        await session.run("Will it rain in Oslo?")
        assert await session.run("Tell #ops, then check Bergen.") == "Told ops."
    assert server.errors == []
    sent = bodies(server)
    assert len(sent) == 7
    for body in sent:
        for definition in deferred_definitions(body):
            assert definition.get("defer_loading") is True, (definition["name"], body["tools"])
    assert len({cached_prefix(body) for body in sent}) == 1
    assert {"mcp__chat__post_message", WEATHER} <= visible_tool_names(sent[-1])


async def test_discovered_style_loads_found_tools_into_the_prefix(tmp_path: Path) -> None:
    with MessagesServer(DISCOVER_AND_CALL) as server:
        session = session_for(server, tmp_path, disclosure="discovered")
        assert await session.run("Will it rain in Oslo?") == "It will rain in Oslo."
    assert server.errors == []
    before, after, _ = bodies(server)
    assert all("defer_loading" not in t for t in before["tools"] + after["tools"])
    assert WEATHER not in [t["name"] for t in before["tools"]]
    assert WEATHER in [t["name"] for t in after["tools"]]
    # The price of this style: the discovery changed the cached prefix.
    assert cached_prefix(before) != cached_prefix(after)


async def test_select_loads_the_named_tools_and_reports_unknown_ones(tmp_path: Path) -> None:
    script = [
        Turn(
            [
                tool_use(
                    "ToolSearch",
                    {"query": "select:mcp__chat__post_message,mcp__weather__get_forecast,Nope"},
                )
            ]
        ),
        Turn(
            [
                tool_use(WEATHER, {"city": "Oslo"}),
                tool_use("mcp__chat__post_message", {"channel": "ops", "text": "rain"}),
            ]
        ),
        Turn([text("Done.")]),
    ]
    for disclosure in ("defer_loading", "discovered"):
        with MessagesServer(script) as server:
            session = session_for(server, tmp_path, disclosure=disclosure)
            assert await session.run("Forecast and post it.") == "Done."
        assert server.errors == [], disclosure
        _, found, last = bodies(server)
        [search] = results_of(found)
        assert json.loads(search) == [
            {"type": "tool_reference", "tool_name": "mcp__chat__post_message"},
            {"type": "tool_reference", "tool_name": WEATHER},
        ], "references alone, in the order asked; the unknown name is left out"
        assert visible_tool_names(found) >= DEFERRED
        outcomes = " ".join(results_of(last))
        assert "rain in Oslo" in outcomes and "posted to ops" in outcomes


@pytest.mark.parametrize("disclosure", ["defer_loading", "discovered"])
async def test_found_tools_survive_compaction_and_resume(tmp_path: Path, disclosure: str) -> None:
    script = [
        Turn([tool_use("ToolSearch", {"query": "select:mcp__weather__get_forecast"})]),
        Turn([text("Loaded the forecast tool.")]),
        Turn([text("The user wants Oslo's weather; the forecast tool was found.")]),  # summary
        Turn([tool_use(WEATHER, {"city": "Oslo"})]),
        Turn([text("Rain in Oslo.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, disclosure=disclosure)
        await session.run("Find a weather tool.")
        assert await session.compact() is not None
        assert await session.run("Now use it for Oslo.") == "Rain in Oslo."
        session_id = session.session_id
    assert server.errors == [], server.errors
    after_compaction = bodies(server)[3]
    assert WEATHER in visible_tool_names(after_compaction)
    assert len(after_compaction["messages"]) <= 3, "the history was replaced by the summary"
    if disclosure == "defer_loading":
        [definition] = [t for t in after_compaction["tools"] if t["name"] == WEATHER]
        assert definition["defer_loading"] is True
        assert cached_prefix(after_compaction) == cached_prefix(bodies(server)[0])

    resumed_script = [Turn([tool_use(WEATHER, {"city": "Bergen"})]), Turn([text("Bergen too.")])]
    with MessagesServer(resumed_script) as server:
        resumed = Session.resume(
            session_id,
            tools=pool(),
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            load_settings=False,
            permission_mode="bypassPermissions",
            disclosure=disclosure,
        )
        assert await resumed.run("And Bergen?") == "Bergen too."
    assert server.errors == [], server.errors
    assert any("rain in Bergen" in r for r in results_of(bodies(server)[-1]))


def test_auto_picks_the_style_from_the_model(tmp_path: Path) -> None:
    assert resolve_disclosure("auto", AnthropicModel(api_key="k")) == ("defer_loading", None)
    assert resolve_disclosure("auto", object()) == ("discovered", None)
    assert resolve_disclosure("server_regex", object()) == ("defer_loading", "regex")
    with pytest.raises(ValueError, match="server_bm25"):
        resolve_disclosure("deferred")
    with pytest.raises(ValueError, match="disclosure must be one of"):
        Session(tools=pool(), model=object(), cwd=tmp_path, disclosure="lazy")  # type: ignore[arg-type]


async def test_a_cassette_replays_in_the_style_it_was_recorded_in(tmp_path: Path) -> None:
    for disclosure, marked in (("auto", True), ("discovered", False)):
        path = tmp_path / f"{disclosure}.json"
        with MessagesServer(DISCOVER_AND_CALL) as server:
            inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
            recorder = CassetteModel(path, cassette_mode="record", inner=inner)
            session = Session(
                tools=pool(),
                model=recorder,
                model_id=MODEL,
                cwd=tmp_path,
                load_settings=False,
                permission_mode="bypassPermissions",
                disclosure=disclosure,  # type: ignore[arg-type]
            )
            await session.run("Will it rain in Oslo?")
        assert server.errors == []
        saved = json.loads(path.read_text())
        assert (saved.get("disclosure") == "defer_loading") is marked
        # Offline, with "auto": the same requests, so every answer is found.
        player = CassetteModel(path, cassette_mode="replay")
        assert player.supports_defer_loading is marked
        replay = Session(
            tools=pool(),
            model=player,
            model_id=MODEL,
            cwd=tmp_path,
            load_settings=False,
            permission_mode="bypassPermissions",
        )
        assert await replay.run("Will it rain in Oslo?") == "It will rain in Oslo."
        assert player.remaining == 0


def server_search_turn(found: str, then: Any) -> Turn:
    """One response of the API's own search: it searches, finds `found`, and calls it."""
    return Turn(
        [
            raw(
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "weather forecast"},
                }
            ),
            raw(
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": found}],
                    },
                }
            ),
            then,
        ]
    )


async def test_server_side_search_finds_and_calls_a_deferred_tool(tmp_path: Path) -> None:
    script = [
        server_search_turn(WEATHER, tool_use(WEATHER, {"city": "Oslo"})),
        Turn([text("Rain in Oslo.")]),
        Turn([text("Asked about Oslo; the forecast tool was found.")]),  # summary
        # The API's search found it before the summary; it must search again after.
        server_search_turn(WEATHER, tool_use(WEATHER, {"city": "Bergen"})),
        Turn([text("Rain in Bergen too.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, disclosure="server_bm25")
        assert await session.run("Will it rain in Oslo?") == "Rain in Oslo."
        await session.compact()
        assert await session.run("And Bergen?") == "Rain in Bergen too."
    assert server.errors == [], server.errors
    first, second, _, after_compaction, last = bodies(server)
    names = [t["name"] for t in first["tools"]]
    assert "ToolSearch" not in names and PLACEHOLDER_NAME not in names
    assert {k: v for k, v in first["tools"][-1].items() if k != "cache_control"} == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert {t["name"] for t in deferred_definitions(first)} == DEFERRED, "the API searches these"
    assert all(t["defer_loading"] is True for t in deferred_definitions(second))
    assert "tool_search_tool_bm25" in json.dumps(first["messages"]), "the attachment names it"
    assert any("rain in Oslo" in r for r in results_of(second))
    assert len({cached_prefix(b) for b in (first, second, after_compaction, last)}) == 1
    assert WEATHER not in visible_tool_names(after_compaction), "searched for again"
    assert any("rain in Bergen" in r for r in results_of(last))


async def test_deny_rules_apply_to_deferred_tools(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("ToolSearch", {"query": "weather forecast chat message"})]),
        Turn([text("Only chat is there.")]),
    ]
    (tmp_path / ".toolhost").mkdir()
    (tmp_path / ".toolhost" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["mcp__weather__*"]}})
    )
    with MessagesServer(script) as server:
        session = Session(
            tools=pool(),
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            trust_folder=True,  # the folder's settings are the test's own
            permission_mode="bypassPermissions",
        )
        await session.run("Weather and chat?")
    assert server.errors == []
    first, second = bodies(server)
    assert WEATHER not in json.dumps(first), "a denied tool is neither sent nor announced"
    [search] = results_of(second)
    assert WEATHER not in search and "mcp__chat__post_message" in search


async def test_allow_rules_apply_to_a_found_deferred_tool(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("ToolSearch", {"query": "select:mcp__chat__post_message"})]),
        Turn([tool_use("mcp__chat__post_message", {"channel": "ops", "text": "hi"})]),
        Turn([text("Posted.")]),
    ]
    for allowed in (True, False):
        home = tmp_path / ("allowed" if allowed else "asked")
        (home / ".toolhost").mkdir(parents=True)
        rules = {"allow": ["mcp__chat__*"]} if allowed else {}
        (home / ".toolhost" / "settings.json").write_text(json.dumps({"permissions": rules}))
        with MessagesServer(script) as server:
            session = Session(
                tools=pool(),
                model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
                model_id=MODEL,
                cwd=home,
                trust_folder=True,  # the folder's settings are the test's own
                permission_mode="default",  # nobody to ask: what would ask is denied
            )
            await session.run("Say hi in #ops.")
        assert server.errors == []
        [outcome] = results_of(bodies(server)[-1])
        assert ("posted to ops" in outcome) is allowed, outcome
