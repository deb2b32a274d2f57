"""Record/replay cassettes: recorded from the real client against the loopback server,
replayed with no network, byte-for-byte."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelRequest
from jupyter_toolhost.model.cassette import (
    CassetteError,
    CassetteMismatch,
    CassetteModel,
    normalise_text,
)
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"


class LookInput(BaseModel):
    name: str


def look_tool(answers: dict[str, str]) -> Tool[LookInput]:
    """Reads a file under the cwd and reports its absolute path (a temp path in tests)."""

    def look(input: LookInput, context: ToolUseContext) -> str:
        path = context.resolve_path(input.name)
        return f"{path}: {answers.get(input.name, path.read_text())}"

    return build_tool(
        name="Look", input_model=LookInput, call=look, description="Look.", concurrency_safe=True
    )


SCRIPT = [
    Turn(
        [
            text("Looking at both."),
            tool_use("Look", {"name": "a.txt"}, id="toolu_01Abc9"),
            tool_use("Look", {"name": "b.txt"}, id="toolu_01Xyz7"),
        ],
        block_delay=0.01,
    ),
    Turn([text("A is alpha"), text(" and B is beta.")]),
]


def session_with(model: Any, cwd: Path, **answers: str) -> Session:
    return Session(
        tools=[look_tool(answers)],
        model=model,
        model_id=MODEL,
        cwd=cwd,
        retry_backoff_s=0.01,
        permission_mode="bypassPermissions",  # about replay, not permissions
    )


def sample(cwd: Path) -> Path:
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "a.txt").write_text("alpha")
    (cwd / "b.txt").write_text("beta")
    return cwd


async def record(
    path: Path, cwd: Path, script: list[Turn] = SCRIPT
) -> tuple[Session, MessagesServer]:
    with MessagesServer(list(script)) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        session = session_with(CassetteModel(path, mode="record", inner=inner), cwd)
        await session.run("What do a.txt and b.txt say?")
    assert server.errors == []
    return session, server


async def test_record_then_replay_gives_byte_identical_messages(tmp_path: Path) -> None:
    cwd = sample(tmp_path / "work")
    cassette = tmp_path / "run.json"
    recorded, server = await record(cassette, cwd)

    # The inner model's ids went to the server; the session and the file hold stable ids.
    assert "toolu_01Abc9" in json.dumps(server.requests[-1].body)
    ids = [b["id"] for b in recorded.messages[1]["content"] if b["type"] == "tool_use"]
    assert ids == ["toolu_01", "toolu_02"]
    data = json.loads(cassette.read_text())
    assert len(data["interactions"]) == 2
    assert "toolu_01Abc9" not in cassette.read_text()
    assert str(tmp_path) not in cassette.read_text()  # temp paths are normalised
    assert cassette.stat().st_size < 4000

    replay = CassetteModel(cassette, mode="replay")
    replayed = session_with(replay, cwd)
    result = await replayed.run("What do a.txt and b.txt say?")  # no server: no network

    assert result == "A is alpha and B is beta."
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)
    assert replay.remaining == 0
    assert replayed.usage == recorded.usage


async def test_replay_in_another_folder_matches_after_normalising(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    await record(cassette, sample(tmp_path / "first"))
    replayed = session_with(CassetteModel(cassette, mode="auto"), sample(tmp_path / "second"))
    assert await replayed.run("What do a.txt and b.txt say?") == "A is alpha and B is beta."


async def test_replay_with_a_different_tool_result_fails_with_a_diff(tmp_path: Path) -> None:
    cwd = sample(tmp_path / "work")
    cassette = tmp_path / "run.json"
    await record(cassette, cwd)
    (cwd / "b.txt").write_text("gamma")

    replayed = session_with(CassetteModel(cassette, mode="replay"), cwd)
    with pytest.raises(CassetteMismatch) as raised:
        await replayed.run("What do a.txt and b.txt say?")
    message = str(raised.value)
    assert "\n" not in message  # one line a person can act on; the diff is beside it
    assert message.startswith("Request #2 does not match run.json: after 1 recorded request")
    assert "a tool_result for Look that the cassette never saw" in message
    assert "Re-record" in message and "--cassette-mode record" in message
    diff = raised.value.diff.splitlines()
    assert any(line.startswith("-") and "beta" in line for line in diff)
    assert any(line.startswith("+") and "gamma" in line for line in diff)
    # The failed request still left a valid conversation behind.
    assert replayed.messages[-1]["role"] == "user"


async def test_replay_past_the_end_says_how_to_fix_it(tmp_path: Path) -> None:
    cwd = sample(tmp_path / "work")
    cassette = tmp_path / "run.json"
    await record(cassette, cwd)
    replayed = session_with(CassetteModel(cassette, mode="replay"), cwd)
    await replayed.run("What do a.txt and b.txt say?")
    with pytest.raises(CassetteError, match="has 2 recorded requests"):
        await replayed.run("and more?")


async def test_a_broken_stream_is_recorded_and_replayed(tmp_path: Path) -> None:
    cwd = sample(tmp_path / "work")
    cassette = tmp_path / "run.json"
    broken = Turn([text("Looking"), tool_use("Look", {"name": "a.txt"})], cut_mid_block=True)
    recorded, _ = await record(cassette, cwd, [broken, *SCRIPT])
    data = json.loads(cassette.read_text())
    assert "broken" in data["interactions"][0]["response"]

    replayed = session_with(CassetteModel(cassette, mode="replay"), cwd)
    await replayed.run("What do a.txt and b.txt say?")
    assert json.dumps(replayed.messages) == json.dumps(recorded.messages)


async def test_auto_mode_without_file_or_key_says_how_to_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    model = CassetteModel(tmp_path / "missing.json")
    with pytest.raises(CassetteError, match="Set ANTHROPIC_API_KEY"):
        _ = model.mode
    session = session_with(model, sample(tmp_path / "work"))
    with pytest.raises(CassetteError):
        await session.run("hi")
    with pytest.raises(CassetteError, match="does not exist"):
        await session_with(CassetteModel(tmp_path / "missing.json", mode="replay"), tmp_path).run(
            "hi"
        )


async def test_a_cassette_whose_interaction_is_not_an_object_is_refused_on_reading(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "broken.json"
    cassette.write_text(json.dumps({"version": 2, "interactions": [{}, "not a record"]}))
    session = session_with(CassetteModel(cassette, mode="replay"), tmp_path)
    with pytest.raises(
        CassetteError,
        match=r"broken\.json cannot be replayed: interactions\[1\]: must be a recorded interaction",
    ):
        await session.run("hi")


def test_auto_mode_records_when_a_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert CassetteModel(tmp_path / "new.json").mode == "record"
    (tmp_path / "old.json").write_text('{"version": 1, "interactions": []}')
    assert CassetteModel(tmp_path / "old.json").mode == "replay"


def test_normalise_text_hides_what_differs_between_runs(tmp_path: Path) -> None:
    cwd = str(tmp_path / "work")
    text_in = f"{cwd}/a.txt and {cwd}/.toolhost/sessions/4f2a9c/tool-results/toolu_01.txt"
    assert normalise_text(text_in, cwd=cwd) == (
        "<cwd>/a.txt and <cwd>/.toolhost/sessions/<session>/tool-results/toolu_01.txt"
    )
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    assert request.to_api() == {
        "model": "m",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "x"}],
    }


class DrawInput(BaseModel):
    title: str


def _png(size: tuple[int, int], color: str) -> bytes:
    """A real PNG (Pillow's encoder): the loopback server checks an image's bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def draw_tool(png: bytes) -> Tool[DrawInput]:
    """Answers with an image block, as PythonExec does for a plot."""
    import base64

    def draw(input: DrawInput, context: ToolUseContext) -> list[dict[str, Any]]:
        data = base64.b64encode(png).decode()
        return [
            {"type": "text", "text": f"drew {input.title}"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": data},
            },
        ]

    return build_tool(name="Draw", input_model=DrawInput, call=draw, description="Draw.")


async def test_replay_matches_an_image_result_whose_bytes_differ(tmp_path: Path) -> None:
    """A plot drawn again by another matplotlib has other bytes: replay compares the
    conversation, not the pixels, and the cassette does not carry the image data."""
    script = [Turn([tool_use("Draw", {"title": "scores"})]), Turn([text("A bar chart.")])]
    cassette = tmp_path / "draw.json"
    first_png = _png((40, 30), "navy")
    with MessagesServer(script) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        recording = Session(
            tools=[draw_tool(first_png)],
            model=CassetteModel(cassette, mode="record", inner=inner),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        assert await recording.run("Draw the scores.") == "A bar chart."
    # The real request carried the image; the cassette keeps a placeholder.
    sent = json.dumps(server.requests[-1].body)
    encoded = base64.b64encode(first_png).decode()
    assert '"media_type": "image/png"' in sent and encoded in sent
    assert encoded[:40] not in cassette.read_text()

    replayed = Session(
        tools=[draw_tool(_png((40, 30), "teal"))],
        model=CassetteModel(cassette, mode="replay"),
        model_id=MODEL,
        cwd=tmp_path,
        permission_mode="bypassPermissions",
    )
    assert await replayed.run("Draw the scores.") == "A bar chart."

    # What the tool said about the image still counts: another text is a mismatch.
    changed = Session(
        tools=[draw_tool(first_png)],
        model=CassetteModel(cassette, mode="replay"),
        model_id=MODEL,
        cwd=tmp_path,
        permission_mode="bypassPermissions",
    )
    with pytest.raises(CassetteMismatch):
        await changed.run("Draw the other scores.")


async def test_a_replayed_response_starts_with_its_billed_input(tmp_path: Path) -> None:
    """As the API's `message_start` does: a replay interrupted before its message ends
    still counts the input the recording was billed for."""
    from jupyter_toolhost.model.base import MessageStarted, Usage
    from jupyter_toolhost.model.cassette import _serve

    cassette = tmp_path / "run.json"
    await record(cassette, sample(tmp_path / "work"))
    response = json.loads(cassette.read_text())["interactions"][1]["response"]
    recorded = Usage.from_dict(response["usage"])
    assert recorded.context_tokens > 0, response  # a recording with its usage kept
    events = [event async for event in _serve(response)]
    assert events[0] == MessageStarted(
        Usage(
            recorded.input_tokens,
            0,
            recorded.cache_creation_input_tokens,
            recorded.cache_read_input_tokens,
        )
    )
    assert sum(isinstance(event, MessageStarted) for event in events) == 1
