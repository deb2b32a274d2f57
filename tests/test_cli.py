"""`python -m jupyter_toolhost`: the offline demo and the error paths, run as subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from io import StringIO
from pathlib import Path

from jupyter_toolhost.__main__ import TerminalApprover
from jupyter_toolhost.demo import demo_cassette_path, record_demo
from jupyter_toolhost.disclosure.deferral import tools_for_request
from jupyter_toolhost.permissions.api import ApprovalRequest
from jupyter_toolhost.tools import builtin_tools


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["JUPYTER_TOOLHOST_HOME"] = str(cwd / "home")
    return subprocess.run(
        [sys.executable, "-m", "jupyter_toolhost", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_no_arguments_runs_the_offline_demo(tmp_path: Path) -> None:
    done = run_cli(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("● Glob(**/*) ✓ ") for line in lines)
    assert any(line.startswith("● Read(notes.txt) ✓ ") for line in lines)
    assert any(line.startswith("● Read(data/sales.csv) ✓ ") for line in lines)
    assert "south sold 80 in March" in done.stdout
    assert "Offline demo" in done.stderr and "[end_turn] 3 turns" in done.stderr
    assert not (tmp_path / "home").exists()  # the demo leaves nothing behind


def test_a_prompt_without_key_or_cassette_fails_clearly(tmp_path: Path) -> None:
    done = run_cli("hello", cwd=tmp_path)
    assert done.returncode == 2
    assert "no ANTHROPIC_API_KEY is set" in done.stderr and "--cassette" in done.stderr


def test_a_missing_cassette_without_key_says_how_to_record(tmp_path: Path) -> None:
    done = run_cli("--cassette", str(tmp_path / "new.json"), "hello", cwd=tmp_path)
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr


def test_a_cassette_replays_from_the_command_line(tmp_path: Path) -> None:
    cassette = tmp_path / "hello.json"
    response = {"content": [{"type": "text", "text": "Hi there."}], "stop_reason": "end_turn"}
    # The built-in pool has deferred tools, so the first message also announces them.
    announced = tools_for_request(builtin_tools(cwd=tmp_path), []).attachment
    assert announced is not None and "TodoWrite" in announced
    prompt = [{"type": "text", "text": "hello"}, {"type": "text", "text": announced}]
    request = {"messages": 1, "tools": [], "last": {"role": "user", "content": prompt}}
    cassette.write_text(
        json.dumps({"version": 1, "interactions": [{"request": request, "response": response}]})
    )
    done = run_cli("--cassette", str(cassette), "--mode", "replay", "hello", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hi there."


def approval() -> ApprovalRequest:
    return ApprovalRequest("Write", "Write", "x.txt", {}, "writes a file", None, (), "toolu_01")


async def test_terminal_approver_denies_without_a_terminal() -> None:
    decision = await TerminalApprover(stdin=StringIO("y\n"), out=StringIO()).ask(approval())
    assert decision.choice == "deny" and "no terminal" in (decision.feedback or "")


async def test_terminal_approver_reads_the_answer_from_a_terminal() -> None:
    leader, follower = pty.openpty()
    out = StringIO()
    with os.fdopen(follower, "r") as terminal:
        os.write(leader, b"a\n")
        decision = await TerminalApprover(stdin=terminal, out=out).ask(approval())
    os.close(leader)
    assert decision.choice == "always"
    assert "Write(x.txt) needs approval" in out.getvalue()


async def test_the_shipped_demo_cassette_is_what_the_recorder_makes(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    await record_demo(path)
    fresh = json.loads(path.read_text())["interactions"]
    shipped = json.loads(demo_cassette_path().read_text())["interactions"]
    for interaction in (*fresh, *shipped):
        interaction["response"].pop("usage")  # token counts follow the temp path's length
    assert fresh == shipped
    assert asyncio.iscoroutinefunction(record_demo)
