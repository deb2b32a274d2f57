"""Cassettes match requests by content: branches of one conversation live side by side, a
miss says in one line what differed, `auto` records only what the file lacks, the file's
metadata is honest and it never holds a secret. Real client, loopback server, real files."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import BlockComplete, ModelRequest
from jupyter_toolhost.model.cassette import SOURCE_ENV, CassetteMismatch, CassetteModel
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"
PROMPT = "Write the note."


class NoteInput(BaseModel):
    text: str


def note_tool() -> Tool[NoteInput]:
    """Writes note.txt: not read-only, so the default permission mode asks first."""

    def note(input: NoteInput, context: ToolUseContext) -> str:
        context.resolve_path("note.txt").write_text(input.text)
        return "written"

    return build_tool(name="Note", input_model=NoteInput, call=note, description="Note.")


class Clicks:
    """An approver that always gives the same answer, as a person clicking would."""

    def __init__(self, choice: str) -> None:
        self.choice = choice

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.choice == "allow":
            return ApprovalDecision("allow")
        return ApprovalDecision("deny", "not now")


def session_with(model: Any, cwd: Path, choice: str) -> Session:
    cwd.mkdir(parents=True, exist_ok=True)
    return Session(
        tools=[note_tool()],
        model=model,
        model_id=MODEL,
        cwd=cwd,
        approver=Clicks(choice),
        write_transcript=False,
    )


FIRST = Turn([text("Writing it."), tool_use("Note", {"text": "hi"}, id="toolu_01RealAbc")])
ALLOWED = Turn([text("Done: the note is written.")])
DENIED = Turn([text("You declined, so nothing was written.")])


async def test_allow_and_deny_paths_live_in_one_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SOURCE_ENV, raising=False)
    cassette = tmp_path / "branches.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        allow = session_with(
            CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a", "allow"
        )
        assert await allow.run(PROMPT) == "Done: the note is written."
    session_id = json.loads(cassette.read_text())["session"]

    # Auto mode on the existing file: the first request is served from it, the Deny path
    # differs at the tool_result, so only that request reaches the server and is appended.
    with MessagesServer([DENIED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        model = CassetteModel(cassette, cassette_mode="auto", inner=inner)
        deny = session_with(model, tmp_path / "d", "deny")
        assert await deny.run(PROMPT) == "You declined, so nothing was written."
    assert server.errors == [] and len(server.requests) == 1
    assert model.mode == "replay" and not model.replaying  # tokens were spent on the miss
    data = json.loads(cassette.read_text())
    assert data["session"] == session_id == model.session_id  # kept when appending
    assert [i["request"]["messages"] for i in data["interactions"]] == [1, 3, 3]
    assert len({i["key"] for i in data["interactions"]}) == 3

    # Either path replays from the one file, in any order, with no server.
    for choice, answer, recorded in (
        ("deny", "You declined, so nothing was written.", deny),
        ("allow", "Done: the note is written.", allow),
        ("deny", "You declined, so nothing was written.", deny),
    ):
        replay = CassetteModel(cassette, mode="replay")
        replayed = session_with(replay, tmp_path / f"r-{choice}", choice)
        assert await replayed.run(PROMPT) == answer
        assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
        assert replay.remaining == 1 and replay.replaying
        assert replay.session_id == session_id
    assert (tmp_path / "r-allow" / "note.txt").read_text() == "hi"
    assert not (tmp_path / "r-deny" / "note.txt").exists()


async def test_the_deny_path_misses_in_replay_mode_with_one_line(tmp_path: Path) -> None:
    cassette = tmp_path / "allow.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        await session_with(
            CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a", "allow"
        ).run(PROMPT)

    replay = CassetteModel(cassette, mode="replay")
    with pytest.raises(CassetteMismatch) as raised:
        await session_with(replay, tmp_path / "d", "deny").run(PROMPT)
    message = str(raised.value)
    assert "\n" not in message and len(message) < 300
    assert message.startswith(
        "Request #2 does not match allow.json: after 1 recorded request this conversation "
        "went another way: the newest message is a tool_result for Note (an error) that the "
        "cassette never saw."
    )
    assert "--cassette-mode record" in message and "ANTHROPIC_API_KEY" in message
    diff = raised.value.diff
    assert diff.startswith("--- allow.json closest recorded request\n+++ this run, request #2")
    assert any(line.startswith("-") and "written" in line for line in diff.splitlines())
    assert any(line.startswith("+") and "not now" in line for line in diff.splitlines())
    assert replay.remaining == 1  # the Allow path's second answer was not served


async def test_a_miss_in_auto_mode_with_a_key_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "run.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        await session_with(
            CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a", "allow"
        ).run(PROMPT)

    with MessagesServer([DENIED]) as server:
        # No inner model: the default client, from the environment, records the miss.
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-auto")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        model = CassetteModel(cassette)
        assert model.mode == "replay" and model.replaying
        await session_with(model, tmp_path / "d", "deny").run(PROMPT)
    assert len(server.requests) == 1 and server.errors == []
    lasts = [i["request"]["last"] for i in json.loads(cassette.read_text())["interactions"]]
    assert "written" in json.dumps(lasts[1]) and "not now" in json.dumps(lasts[2])

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    for choice in ("allow", "deny"):  # both now replay, with no key and no server
        replay = CassetteModel(cassette)
        await session_with(replay, tmp_path / f"r-{choice}", choice).run(PROMPT)
        assert replay.replaying


async def texts(model: CassetteModel, request: ModelRequest) -> str:
    events = [event async for event in model.stream(request)]
    return "".join(str(e.block.get("text", "")) for e in events if isinstance(e, BlockComplete))


async def test_repeated_identical_requests_are_served_in_order(tmp_path: Path) -> None:
    cassette = tmp_path / "same.json"
    request = ModelRequest(
        model=MODEL, messages=[{"role": "user", "content": "Pick a number."}], max_tokens=50
    )
    with MessagesServer([Turn([text("one")]), Turn([text("two")])]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        recording = CassetteModel(cassette, mode="record", inner=inner)
        assert [await texts(recording, request), await texts(recording, request)] == ["one", "two"]
    interactions = json.loads(cassette.read_text())["interactions"]
    assert interactions[0]["key"] == interactions[1]["key"]

    replay = CassetteModel(cassette, mode="replay")
    assert [await texts(replay, request), await texts(replay, request)] == ["one", "two"]
    with pytest.raises(CassetteMismatch, match="has 2 recorded requests") as raised:
        await texts(replay, request)
    assert "\n" not in str(raised.value)


async def test_a_version_1_file_still_replays_by_position(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        recorded = session_with(
            CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a", "allow"
        )
        await recorded.run(PROMPT)
    data = json.loads(cassette.read_text())
    old = {"version": 1, "interactions": [
        {"request": i["request"], "response": i["response"]} for i in data["interactions"]
    ]}  # fmt: skip
    cassette.write_text(json.dumps(old))

    replay = CassetteModel(cassette, mode="replay")
    assert replay.session_id is None and replay.source is None
    replayed = session_with(replay, tmp_path / "b", "allow")
    assert await replayed.run(PROMPT) == "Done: the note is written."
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
    assert replay.remaining == 0

    with pytest.raises(CassetteMismatch) as raised:
        await session_with(CassetteModel(cassette, mode="replay"), tmp_path / "c", "deny").run(
            PROMPT
        )
    assert "\n" not in str(raised.value) and "Request #2 does not match" in str(raised.value)
    assert "not now" in raised.value.diff
    assert json.loads(cassette.read_text()) == old  # replay never rewrites a file


async def test_recorded_and_scripted_sources_are_honest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SOURCE_ENV, raising=False)
    real, scripted = tmp_path / "real.json", tmp_path / "scripted.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        model = CassetteModel(real, mode="record", inner=inner)
        assert model.source is None and not model.replaying
        session_id = model.session_id  # known before anything is written
        await session_with(model, tmp_path / "a", "allow").run(PROMPT)
    data = json.loads(real.read_text())
    assert data["session"] == session_id and re.fullmatch(r"[0-9a-f]{12}", data["session"])
    source = data["source"]
    assert source == model.source
    assert source["kind"] == "recorded" and source["model"] == MODEL
    assert re.fullmatch(r"anthropic \d+\.\d+\.\d+\S*", source["client"])
    assert source["recorded_at"] == datetime.now(UTC).strftime("%Y-%m-%d")
    assert all(i["response"]["usage"]["output_tokens"] > 0 for i in data["interactions"])

    monkeypatch.setenv(SOURCE_ENV, "scripted")  # what harnesses on the loopback server set
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        recording = session_with(
            CassetteModel(scripted, mode="record", inner=inner), tmp_path / "b", "allow"
        )
        await recording.run(PROMPT)
    data = json.loads(scripted.read_text())
    assert data["source"] == {"kind": "scripted", "note": "scripted answers stand in for the model"}
    for interaction in data["interactions"]:
        assert interaction["response"]["model"] == "scripted"
        assert interaction["response"]["usage"] == {}
    assert MODEL not in scripted.read_text() and "tokens" not in scripted.read_text()
    # The recording session saw what replay will serve: no model, no token counts.
    monkeypatch.delenv(SOURCE_ENV)
    replay = CassetteModel(scripted, mode="replay")
    replayed = session_with(replay, tmp_path / "c", "allow")
    await replayed.run(PROMPT)
    assert replayed.usage == recording.usage and replayed.usage.output_tokens == 0
    assert replay.source == data["source"] and replay.session_id == data["session"]
    # The keyword says the same as the environment variable.
    keyword = CassetteModel(tmp_path / "k.json", mode="record", inner=inner, source="scripted")
    assert keyword.session_id is not None


async def test_a_cassette_never_holds_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-SECRET-9999")
    cassette = tmp_path / "secret.json"
    with MessagesServer([FIRST, ALLOWED]) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="sk-ant-test-SECRET-4242")
        await session_with(
            CassetteModel(cassette, mode="record", inner=inner), tmp_path / "a", "allow"
        ).run(PROMPT)
        assert "SECRET-4242" in json.dumps(server.requests[0].headers)  # the key was sent
    with MessagesServer([DENIED]) as server:
        # Auto mode recording a miss with the key from the environment.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        await session_with(CassetteModel(cassette), tmp_path / "d", "deny").run(PROMPT)
        assert "SECRET-9999" in json.dumps(server.requests[0].headers)
        base_url = server.base_url
    written = cassette.read_text()
    assert len(json.loads(written)["interactions"]) == 3
    lowered = written.lower()
    for secret in ("SECRET-4242", "SECRET-9999", "sk-ant", "x-api-key", "authorization"):
        assert secret.lower() not in lowered
    assert base_url not in written and "127.0.0.1" not in written
