"""Compaction and transcript resume, end to end against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.compaction import SUMMARY_INSTRUCTION, SUMMARY_PREFIX
from jupyter_toolhost.agent.events import Compacted, LoopEvent
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"


class FindInput(BaseModel):
    query: str


def find_tool() -> Tool[FindInput]:
    """Answers with a tool_reference block, the way a tool search loads a deferred tool."""

    def find(input: FindInput, context: ToolUseContext) -> list[dict[str, Any]]:
        return [{"type": "tool_reference", "tool_name": "Find"}]

    return build_tool(name="Find", input_model=FindInput, call=find, description="Find tools.")


def session_for(server: MessagesServer, tmp_path: Path, **options: Any) -> Session:
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    # These tests are about the loop, not permissions: every call may run.
    options.setdefault("permission_mode", "bypassPermissions")
    return Session(tools=[find_tool()], model=model, model_id=MODEL, cwd=tmp_path, **options)


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


async def test_auto_compaction_replaces_older_turns_with_a_summary(tmp_path: Path) -> None:
    events: list[LoopEvent] = []
    script = [
        Turn([tool_use("Find", {"query": "csv"})]),
        Turn([text("User wants CSV tools; Find found Find.")]),  # the summary
        Turn([text("Done.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, compact_threshold_tokens=50, on_event=events.append)
        result = await session.run("find csv tools")

    assert server.errors == []
    assert result == "Done."
    summary_request, after = bodies(server)[1:]
    assert summary_request["tool_choice"] == {"type": "none"}
    assert summary_request["messages"][-1]["content"][-1]["text"] == SUMMARY_INSTRUCTION
    assert len(after["messages"]) == 1
    assert after["messages"][0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    (boundary,) = session.compact_boundaries
    assert boundary.trigger == "auto" and boundary.pre_tokens > 50
    assert boundary.messages_summarised == 3
    assert boundary.pre_compact_discovered_tools == ("Find",)
    assert [e.boundary for e in events if isinstance(e, Compacted)] == [boundary]
    # The boundary is metadata: never a message; it is in the transcript.
    assert all(m["role"] in ("user", "assistant") for m in session.messages)
    records = [json.loads(x) for x in session.transcript_path.read_text().splitlines()]
    (record,) = [r for r in records if r["type"] == "compact_boundary"]
    assert record["pre_compact_discovered_tools"] == ["Find"]
    resumed = Session.resume(session.session_id, tools=[find_tool()], model=MODEL, cwd=tmp_path)
    assert resumed.messages == session.messages
    assert resumed.compact_boundaries == session.compact_boundaries


async def test_manual_compaction_then_next_prompt_joins_the_summary(tmp_path: Path) -> None:
    script = [Turn([text("Hello!")]), Turn([text("We greeted.")]), Turn([text("Again!")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        await session.run("hi")
        boundary = await session.compact()
        assert boundary is not None and boundary.trigger == "manual"
        assert await session.run("hi again") == "Again!"

    assert server.errors == []
    (joined,) = bodies(server)[2]["messages"]
    assert "We greeted." in joined["content"][0]["text"]
    assert joined["content"][1] == {
        "type": "text",
        "text": "hi again",
        "cache_control": {"type": "ephemeral"},  # after compaction, the last block is marked
    }


async def test_resume_from_transcript_continues_the_conversation(tmp_path: Path) -> None:
    script = [Turn([tool_use("Find", {"query": "x"})]), Turn([text("Found.")])]
    with MessagesServer([*script, Turn([text("Still here.")])]) as server:
        first = session_for(server, tmp_path)
        await first.run("find x")
        resumed = Session.resume(
            first.session_id,
            tools=[find_tool()],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
        )
        assert resumed.messages == first.messages
        assert resumed.usage == first.usage
        assert await resumed.run("still there?") == "Still here."

    assert server.errors == []
    assert len(bodies(server)[-1]["messages"]) == 5


async def test_resume_after_a_crash_mid_tool_answers_the_dangling_call(tmp_path: Path) -> None:
    session_dir = tmp_path / ".toolhost" / "sessions" / "crashed"
    session_dir.mkdir(parents=True)
    lines = [
        {
            "type": "message",
            "message": {"role": "user", "content": [{"type": "text", "text": "go"}]},
        },
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_09", "name": "Find", "input": {"query": "q"}}
                ],
            },
        },
        "not json",
    ]
    (session_dir / "transcript.jsonl").write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    )
    with MessagesServer([Turn([text("Recovered.")])]) as server:
        model = AnthropicModel(base_url=server.base_url, api_key="test-key")
        session = Session.resume(
            "crashed", tools=[find_tool()], model=model, model_id=MODEL, cwd=tmp_path
        )
        answer = session.messages[-1]["content"][0]
        assert answer["tool_use_id"] == "toolu_09" and answer["is_error"]
        assert await session.run("what happened?") == "Recovered."

    assert server.errors == []
