"""The Claude Code benchmark's own machinery, without Claude Code (its licence is not open).

The scripted server side (`Conductor`) is driven over real HTTP by the real `anthropic`
client; this project's contender runs the real `Session` and Bash; a stand-in `claude`
that fails shows that a peer which gives no figure is reported as such, never invented.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from benchmarks import bench_claude_code as bench
from benchmarks import common
from jupyter_toolhost.testing import MessagesServer

TOOLS: list[Any] = [
    {"name": "Bash", "description": "b", "input_schema": {"type": "object", "properties": {}}}
]
TINY = bench.Scenario("tiny", "tiny", ("0", "0", "0"))


async def _send(client: AsyncAnthropic, messages: list[Any], *, tools: bool = True) -> Any:
    extra: dict[str, Any] = {"tools": TOOLS} if tools else {}
    return await client.messages.create(
        model=bench.MODEL_ID, max_tokens=100, messages=messages, **extra
    )


def _results(ids: list[str], *, error_at: int | None = None) -> list[Any]:
    return [
        {"type": "tool_result", "tool_use_id": i, "content": "ok", "is_error": n == error_at}
        for n, i in enumerate(ids)
    ]


async def _conversation(conductor: bench.Conductor, *, error_at: int | None = None) -> None:
    """Side request, the prompt, then the results; answered by `conductor` over HTTP."""
    with MessagesServer(conductor) as server:
        async with AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0) as client:
            side = await _send(client, [{"role": "user", "content": "title?"}], tools=False)
            assert side.content[0].text == bench.SIDE_TEXT
            other = await _send(client, [{"role": "user", "content": "unrelated"}])
            assert [b.type for b in other.content] == ["text"]
            prompt = [{"role": "user", "content": [{"type": "text", "text": bench.PROMPT}]}]
            asked = await _send(client, prompt)
            assert [b.input for b in asked.content] == [
                {"command": c} for c in conductor.scenario.commands
            ]
            assert [b.id for b in asked.content] == conductor.ids
            again = await _send(client, prompt)  # asked once only: no second set of calls
            assert [b.type for b in again.content] == ["text"]
            assistant = [b.model_dump(exclude_none=True) for b in asked.content]
            results = _results(conductor.ids, error_at=error_at)
            history = [
                *prompt,
                {"role": "assistant", "content": assistant},
                {"role": "user", "content": results},
            ]
            done = await _send(client, history)
            assert done.content[0].text == bench.FINAL_TEXT


async def test_side_requests_do_not_advance_the_script_and_the_figure_spans_the_calls() -> None:
    conductor = bench.Conductor(TINY, "t")
    await _conversation(conductor)
    assert conductor.side_requests == 3
    assert conductor.asked_at is not None and conductor.answered_at is not None
    assert conductor.figure() == conductor.answered_at - conductor.asked_at > 0


async def test_an_error_result_gives_no_figure() -> None:
    conductor = bench.Conductor(TINY, "t")
    await _conversation(conductor, error_at=1)
    with pytest.raises(bench.RunFailed, match="1 errors"):
        conductor.figure()


def test_missing_results_or_requests_give_no_figure() -> None:
    never_asked = bench.Conductor(TINY, "t")
    with pytest.raises(bench.RunFailed, match="never sent the request"):
        never_asked.figure()
    conductor = bench.Conductor(TINY, "t")
    prompt = {"role": "user", "content": bench.PROMPT}
    conductor({"tools": TOOLS, "messages": [prompt]})
    with pytest.raises(bench.RunFailed, match="tool_results"):
        conductor.figure()
    one = {"role": "user", "content": _results(conductor.ids[:1])}
    conductor({"tools": TOOLS, "messages": [prompt, one]})
    with pytest.raises(bench.RunFailed, match="2 results missing"):
        conductor.figure()


def test_a_request_that_is_not_the_users_turn_is_a_side_request() -> None:
    conductor = bench.Conductor(TINY, "t")
    probe = [{"role": "user", "content": bench.PROMPT}, {"role": "system", "content": "x"}]
    turn = conductor({"tools": TOOLS, "messages": probe})
    assert conductor.asked_at is None and conductor.side_requests == 1
    assert turn.first_tool_use() is None


async def test_this_project_runs_the_scripted_bash_calls_under_the_allow_rule() -> None:
    conductor = await bench.run_ours(TINY, "ours")
    assert conductor.figure() > 0
    assert sorted(r["tool_use_id"] for r in conductor.results) == conductor.ids
    assert conductor.rejected == 0  # every request this project sent was valid


async def test_a_call_the_rule_does_not_allow_gives_no_figure(tmp_path: Path) -> None:
    marker = tmp_path / "written"
    beyond = bench.Scenario("beyond", "beyond", (f"0; touch {marker}",))
    conductor = await bench.run_ours(beyond, "deny")
    with pytest.raises(bench.RunFailed, match="1 errors"):
        conductor.figure()
    assert not marker.exists()


def test_no_npm_means_no_claude_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    claude, why = bench.install_claude_code(tmp_path / "install")
    assert claude is None and why == "npm is not on PATH"
    claude, why = bench.probe(tmp_path / "missing")
    assert claude is None and "--version failed" in why


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_an_unreachable_registry_means_no_claude_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{port}/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    claude, why = bench.install_claude_code(tmp_path / "install")
    assert claude is None
    assert why.startswith("npm install exited") and "ECONNREFUSED" in why


def _stand_in(tmp_path: Path) -> Path:
    """A `claude` that answers --version and fails every run."""
    path = tmp_path / "claude"
    path.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "0.0.0 (stand-in)" && exit 0\nexit 3\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def test_a_peer_that_gives_no_figure_is_reported_without_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(bench, "SCENARIOS", (TINY,))
    await bench.main(1, str(_stand_in(tmp_path)))
    printed = capsys.readouterr().out
    assert "claude exited 3" in printed
    payload = json.loads((tmp_path / "results" / "claude_code.json").read_text())
    keys = set(payload["measures"])
    assert "tiny.ours.median_s" in keys
    assert not any("claude_code" in k or "ratio" in k for k in keys)
    assert payload["failures"]["tiny.claude_code"]
    assert payload["versions"]["claude-code"] == "0.0.0 (stand-in)"


async def test_without_claude_code_the_figures_are_this_projects_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(bench, "SCENARIOS", (TINY,))
    await bench.main(1, os.fspath(tmp_path / "no-such-claude"))
    printed = capsys.readouterr().out
    assert "Claude Code could not be installed" in printed
    assert "not installed" in printed
    payload = json.loads((tmp_path / "results" / "claude_code.json").read_text())
    assert set(payload["measures"]) == {
        "tiny.physical_limit_s",
        "tiny.ours.median_s",
        "tiny.ours.min_s",
    }
