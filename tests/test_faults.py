"""Faults become data: storage failures, broken streams and huge outputs, end to end.

The real `anthropic` client talks to the loopback Messages API server, which validates every
request like the real API: `server.errors == []` proves every tool_use got exactly one
tool_result. Files are real: a folder that is a file, a 64 KB tmpfs that fills up.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import LoopEvent, Notice
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolError
from jupyter_toolhost.hooks.hooks import HookInput, HookOutput, Hooks
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelError
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"


class SizeInput(BaseModel):
    size: int
    char: str = "x"


def fault_tools() -> list[Tool[Any]]:
    def produce(input: SizeInput, context: ToolUseContext) -> str:
        return input.char * input.size

    def fail(input: SizeInput, context: ToolUseContext) -> str:
        raise ToolError(input.char * input.size)

    return [
        build_tool(
            name="Produce",
            input_model=SizeInput,
            call=produce,
            description="Produce text.",
            concurrency_safe=True,
        ),
        build_tool(name="Fail", input_model=SizeInput, call=fail, description="Fail."),
    ]


def session_for(server: MessagesServer, tmp_path: Path, **options: Any) -> Session:
    return Session(
        tools=fault_tools(),
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=tmp_path,
        permission_mode="bypassPermissions",
        retry_backoff_s=0.01,
        **options,
    )


def results_by_id(session: Session) -> dict[str, dict[str, Any]]:
    """Every tool_result in the conversation, checking each tool_use has exactly one."""
    uses: list[str] = []
    answers: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for message in session.messages:
        content = message["content"]
        if isinstance(content, str):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                uses.append(block["id"])
            elif block.get("type") == "tool_result":
                answers.append(block["tool_use_id"])
                found[block["tool_use_id"]] = block
    assert sorted(uses) == sorted(answers) and len(set(answers)) == len(answers)
    return found


def content_text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def sent_result_sizes(server: MessagesServer) -> list[int]:
    """Characters of every tool_result the server received, over all requests."""
    sizes = []
    for request in server.requests:
        for message in request.body.get("messages", []):
            if isinstance(message.get("content"), list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        sizes.append(len(json.dumps(block["content"])))
    return sizes


async def ask_again(session: Session, server: MessagesServer) -> None:
    """The next prompt works on the conversation the fault left."""
    server.add_turns(Turn([text("still here")]))
    assert await session.run("and now?") == "still here"
    assert server.errors == []


# ── storage that fails ─────────────────────────────────────────────────────────────────


async def test_unwritable_home_turns_a_big_result_into_an_error_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state folder should be", encoding="utf-8")
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(blocker))
    script = [Turn([tool_use("Produce", {"size": 70_000}, id="toolu_big")]), Turn([text("ok")])]
    events: list[LoopEvent] = []
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        assert await session.run("go", on_event=events.append) == "ok"
        assert server.errors == []
        block = results_by_id(session)["toolu_big"]
        assert block.get("is_error") is True
        body = content_text(block)
        assert "could not be saved" in body and "NotADirectoryError" in body
        assert "x" * 1_000 in body and len(body) < 3_000
        assert max(sent_result_sizes(server)) < 3_000
        assert session._loop.pipeline.results.unsaved["toolu_big"] == "x" * 70_000
        storage = [e for e in events if isinstance(e, Notice) and e.kind == "storage"]
        assert storage and "transcript" in storage[0].text
        assert len(storage) == 1, "one notice per distinct failure, not one per line"
        await ask_again(session, server)


async def test_unwritable_results_dir_in_the_message_budget_still_commits_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(home))
    calls = [tool_use("Produce", {"size": 45_000}, id=f"toolu_m{i}") for i in range(5)]
    with MessagesServer([Turn(calls), Turn([text("ok")])]) as server:
        session = session_for(server, tmp_path)
        results_dir = session.session_dir / "tool-results"
        results_dir.parent.mkdir(parents=True)
        results_dir.write_text("a file, not a folder", encoding="utf-8")
        assert await session.run("go") == "ok"
        assert server.errors == []
        found = results_by_id(session)
        failed = [b for b in found.values() if b.get("is_error")]
        assert failed, "the budget had to move some result out, and could not"
        assert all("could not be saved" in content_text(b) for b in failed)
        assert sum(sent_result_sizes(server)) <= 200_000
        await ask_again(session, server)


@contextlib.contextmanager
def tiny_disk(where: Path) -> Iterator[Path]:
    """A 64 KB tmpfs at `where` (root only), unmounted afterwards."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        why = f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}"
        if os.environ.get("CI"):  # CI runs as root, where this works: a failure there
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


async def test_full_disk_gives_an_error_result_with_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tiny_disk(tmp_path / "disk") as disk:
        monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(disk))
        script = [
            Turn([tool_use("Produce", {"size": 100_000, "char": "d"}, id="toolu_full")]),
            Turn([text("ok")]),
        ]
        with MessagesServer(script) as server:
            session = session_for(server, tmp_path)
            assert await session.run("go") == "ok"
            assert server.errors == []
            body = content_text(results_by_id(session)["toolu_full"])
            assert "could not be saved" in body and "No space left" in body
            assert "d" * 1_000 in body
            leftovers = list((disk / "sessions").rglob("*.txt"))
            assert leftovers == [], "a half-written file must not stay behind"
            await ask_again(session, server)


async def test_a_file_with_the_same_name_is_never_what_the_preview_points_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / "home"))
    script = [
        Turn([tool_use("Produce", {"size": 60_000, "char": "n"}, id="toolu_01")]),
        Turn([text("ok")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        older = session.session_dir / "tool-results" / "toolu_01.txt"
        older.parent.mkdir(parents=True)
        older.write_text("o" * 60_000, encoding="utf-8")  # an earlier run's toolu_01
        assert await session.run("go") == "ok"
        body = content_text(results_by_id(session)["toolu_01"])
        pointed = Path(body.split("Full output saved to: ")[1].split("\n")[0])
        assert pointed.read_text(encoding="utf-8") == "n" * 60_000
        assert older.read_text(encoding="utf-8") == "o" * 60_000
        assert server.errors == []
        await ask_again(session, server)


# ── streams that break ─────────────────────────────────────────────────────────────────


async def test_an_empty_reply_is_retried(tmp_path: Path) -> None:
    empty = Turn([text("never sent")], cut_after_blocks=-1, clean_cut=True)
    notices: list[LoopEvent] = []
    with MessagesServer([empty, Turn([text("ok")])]) as server:
        session = session_for(server, tmp_path)
        assert await session.run("go", on_event=notices.append) == "ok"
        retries = [e for e in notices if isinstance(e, Notice) and e.kind == "retry"]
        assert len(retries) == 1 and "empty event stream" in retries[0].text
        assert server.errors == []
        await ask_again(session, server)


async def test_empty_replies_every_time_end_with_a_clear_error(tmp_path: Path) -> None:
    empty = Turn([text("never sent")], cut_after_blocks=-1, clean_cut=True)
    with MessagesServer([empty] * 4) as server:
        session = session_for(server, tmp_path, stream_retries=3)
        with pytest.raises(ModelError, match=r"broke 4 times.*empty event stream"):
            await session.run("go")
        await ask_again(session, server)


async def test_a_stream_cut_after_message_start_is_retried(tmp_path: Path) -> None:
    cut = Turn([text("half")], cut_after_blocks=0)
    with MessagesServer([cut, Turn([text("ok")])]) as server:
        session = session_for(server, tmp_path)
        assert await session.run("go") == "ok"
        assert server.errors == []
        await ask_again(session, server)


# ── huge outputs that used to skip the budget ───────────────────────────────────────────


async def test_a_150k_error_is_persisted_not_sent_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / "home"))
    script = [
        Turn([tool_use("Fail", {"size": 150_000, "char": "e"}, id="toolu_err")]),
        Turn([text("ok")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        assert await session.run("go") == "ok"
        assert server.errors == []
        block = results_by_id(session)["toolu_err"]
        assert block.get("is_error") is True
        body = content_text(block)
        assert body.startswith("<persisted-output>") and len(body) < 3_000
        saved = Path(body.split("Full output saved to: ")[1].split("\n")[0])
        assert "e" * 150_000 in saved.read_text(encoding="utf-8")
        assert max(sent_result_sizes(server)) < 3_000
        await ask_again(session, server)


async def test_a_hook_that_returns_a_huge_output_goes_through_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / "home"))
    hooks = Hooks()

    def rewrite(hook_input: HookInput) -> HookOutput:
        return HookOutput(updated_output="h" * 120_000)

    hooks.add("PostToolUse", rewrite)
    script = [
        Turn([tool_use("Produce", {"size": 10}, id="toolu_hook")]),
        Turn([text("ok")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, hooks=hooks)
        assert await session.run("go") == "ok"
        assert server.errors == []
        body = content_text(results_by_id(session)["toolu_hook"])
        assert body.startswith("<persisted-output>") and len(body) < 3_000
        saved = Path(body.split("Full output saved to: ")[1].split("\n")[0])
        assert saved.read_text(encoding="utf-8") == "h" * 120_000
        assert max(sent_result_sizes(server)) < 3_000
        await ask_again(session, server)


def test_a_full_disk_under_the_transcript_loses_the_line_not_the_conversation(
    tmp_path: Path,
) -> None:
    """The transcript appends with `os.write`: on a full disk (`/dev/full` answers every
    write with ENOSPC) a record is dropped with one notice per distinct failure, and the
    writer goes on once the disk has room again."""
    from jupyter_toolhost.agent.transcript import Transcript

    notices: list[str] = []
    full = Transcript(Path("/dev/full"), on_error=notices.append)
    for turn in range(3):
        full.message("user", [{"type": "text", "text": f"turn {turn}"}])
    assert full.failures == 3
    assert len(notices) == 1 and "No space left on device" in notices[0]
    assert "will not be resumable" in notices[0]

    roomy = Transcript(tmp_path / "t.jsonl", on_error=notices.append)
    roomy.message("user", [{"type": "text", "text": "after"}])
    assert roomy.failures == 0 and len(notices) == 1
    assert "after" in (tmp_path / "t.jsonl").read_text(encoding="utf-8")
