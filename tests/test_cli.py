"""`python -m jupyter_toolhost`: the offline demo, the error paths, `--mode` (the permission
mode) and `--cassette-mode`, run as subprocesses (against the loopback Messages API server
where a model is needed)."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

from jupyter_toolhost.__main__ import TerminalApprover, parser
from jupyter_toolhost.demo import demo_cassette_path, record_demo
from jupyter_toolhost.disclosure.deferral import tools_for_request
from jupyter_toolhost.permissions.api import ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools


def run_cli(
    *args: str, cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ANTHROPIC_") and k != "JUPYTER_TOOLHOST_PERMISSION_MODE"
    }
    env["JUPYTER_TOOLHOST_HOME"] = str(cwd / "home")
    env.update(env_extra or {})
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
    done = run_cli("--cassette", str(cassette), "--cassette-mode", "replay", "hello", cwd=tmp_path)
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


# ── --mode is the permission mode; --cassette-mode says what --cassette does ─────────────


def untimed(output: str) -> str:
    # Times as every view writes them ("9 ms", "1.2 s", "1 min 05 s": `core.numbers`).
    return re.sub(r"(\d[\d,]*(\.\d)? (ms|s)|\d+ min \d\d s)$", "<t>", output, flags=re.M)


def write_script() -> list[Turn]:
    return [
        Turn([tool_use("Write", {"file_path": "out.txt", "content": "hi"})]),
        Turn([text("done")]),
    ]


def against(server: MessagesServer, home: Path) -> dict[str, str]:
    """The environment of a CLI run on the loopback server (and an empty home)."""
    home.mkdir(exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(home),
    }


def write_result(server: MessagesServer) -> dict[str, object]:
    bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
    [result] = [b for b in bodies[-1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    return result


def result_text(result: dict[str, object]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    assert isinstance(content, list)
    return "".join(str(block.get("text", "")) for block in content)


def test_mode_dont_ask_is_the_permission_mode_end_to_end(tmp_path: Path) -> None:
    with MessagesServer(write_script()) as server:
        done = run_cli(
            "--mode", "dontAsk", "write it", cwd=tmp_path, env_extra=against(server, tmp_path / "u")
        )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out.txt").exists()
    result = write_result(server)
    assert result.get("is_error") and "The permission mode is dontAsk" in result_text(result)
    assert server.errors == []
    assert "● Write(out.txt) ✗" in done.stdout and done.stdout.rstrip().endswith("done")


def test_permission_mode_is_an_alias_and_the_default_asks(tmp_path: Path) -> None:
    with MessagesServer(write_script()) as server:
        env = against(server, tmp_path / "u")
        done = run_cli("--permission-mode", "acceptEdits", "write it", cwd=tmp_path, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "hi"
    assert not write_result(server).get("is_error")
    (tmp_path / "out.txt").unlink()
    with MessagesServer(write_script()) as server:
        done = run_cli("write it", cwd=tmp_path, env_extra=against(server, tmp_path / "u"))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out.txt").exists()  # default mode asks; no terminal: denied
    assert "no terminal to ask" in result_text(write_result(server))


def test_the_mode_variable_still_overrides_the_flag(tmp_path: Path) -> None:
    with MessagesServer(write_script()) as server:
        env = {**against(server, tmp_path / "u"), "JUPYTER_TOOLHOST_PERMISSION_MODE": "dontAsk"}
        done = run_cli("--mode", "acceptEdits", "write it", cwd=tmp_path, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out.txt").exists()
    assert "The permission mode is dontAsk" in result_text(write_result(server))


def test_cassette_mode_record_then_replay_offline(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    work = tmp_path / "work"
    work.mkdir()
    args = ("--cassette", str(cassette), "--mode", "acceptEdits", "write it")
    with MessagesServer(write_script()) as server:
        env = against(server, tmp_path / "u")
        recorded = run_cli("--cassette-mode", "record", *args, cwd=work, env_extra=env)
    assert recorded.returncode == 0, recorded.stderr
    assert len(json.loads(cassette.read_text())["interactions"]) == 2
    assert (work / "out.txt").read_text() == "hi"
    (work / "out.txt").unlink()
    # No server and no key now: replay serves the recorded answers; the tool really runs.
    replayed = run_cli(
        "--cassette-mode", "replay", *args, cwd=work, env_extra={"HOME": env["HOME"]}
    )
    assert replayed.returncode == 0, replayed.stderr
    assert untimed(replayed.stdout) == untimed(recorded.stdout)
    assert "● Write(out.txt) ✓" in replayed.stdout and replayed.stdout.endswith("done\n")
    assert (work / "out.txt").read_text() == "hi"
    # The two modes are independent: under dontAsk the Write is denied, so the second
    # request differs from the recording and replay says so instead of serving it.
    (work / "out.txt").unlink()
    denied = run_cli(
        "--cassette",
        str(cassette),
        "--cassette-mode",
        "replay",
        "--mode",
        "dontAsk",
        "write it",
        cwd=work,
        env_extra={"HOME": env["HOME"]},
    )
    assert denied.returncode == 1
    assert "Request #2 does not match" in denied.stderr
    assert not (work / "out.txt").exists()


def test_mode_and_cassette_mode_mistakes_fail_clearly(tmp_path: Path) -> None:
    old = run_cli("--cassette", str(tmp_path / "c.json"), "--mode", "replay", "hi", cwd=tmp_path)
    assert old.returncode == 2
    assert "Unknown mode 'replay'" in old.stderr
    assert "use --cassette-mode replay" in old.stderr
    lone = run_cli("--cassette-mode", "replay", "hi", cwd=tmp_path)
    assert lone.returncode == 2 and "--cassette-mode needs --cassette PATH" in lone.stderr
    swapped = run_cli("--cassette", "c.json", "--cassette-mode", "dontAsk", "hi", cwd=tmp_path)
    assert swapped.returncode == 2 and "Unknown cassette mode 'dontAsk'" in swapped.stderr
    missing = run_cli(
        "--cassette", str(tmp_path / "none.json"), "--cassette-mode", "replay", "hi", cwd=tmp_path
    )
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert not (tmp_path / "none.json").exists()


def test_help_names_both_modes() -> None:
    text = parser().format_help()
    assert "--mode MODE, --permission-mode MODE" in text
    assert "dontAsk" in text and "--cassette-mode {auto,record,replay}" in text


def test_a_scheduled_prompt_firing_during_the_run_is_shown_as_queued(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("CronCreate", {"cron": "@every 1s", "prompt": "PING", "recurring": False})]),
        Turn([tool_use("Bash", {"command": "sleep 2.5"})]),
        Turn([text("main done")]),
    ]
    with MessagesServer(script) as server:
        env = against(server, tmp_path / "u")
        done = run_cli("--mode", "bypassPermissions", "go", cwd=tmp_path, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert "[queued] Queued behind the running prompt: 'PING' starts when it ends." in done.stderr
    assert "[queued] 1 queued prompt(s) will not run" in done.stderr
    assert done.stdout.rstrip().endswith("main done")
    assert server.errors == [] and len(server.requests) == 3


def test_a_sub_agents_calls_are_indented_under_its_agent_call(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    script = [
        Turn(
            [
                tool_use(
                    "Agent",
                    {
                        "description": "find scripts",
                        "prompt": "List the Python files.",
                        "subagent_type": "general-purpose",
                    },
                )
            ]
        ),
        Turn([tool_use("Glob", {"pattern": "*.py"})]),
        Turn([text("One: a.py.")]),
        Turn([text("The helper found a.py.")]),
    ]
    with MessagesServer(script) as server:
        done = run_cli(
            "--mode",
            "dontAsk",
            "ask a helper",
            cwd=tmp_path,
            env_extra=against(server, tmp_path / "u"),
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    glob = next(i for i, line in enumerate(lines) if "↳ Glob(*.py) ✓" in line)
    agent = next(i for i, line in enumerate(lines) if line.startswith("● Agent"))
    assert lines[glob].startswith("  ↳ ") and glob < agent  # it finished inside the Agent call
