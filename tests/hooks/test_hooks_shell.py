"""Shell hooks run as real subprocesses: stdin JSON, exit codes, stdout JSON, timeouts."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from jupyter_toolhost.hooks.shell_hooks import interpret
from jupyter_toolhost.permissions import HookInput, Hooks, HookSpec, ShellHook, register_shell_hooks


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return f"{sys.executable} {path}"


def _input(tmp_path: Path, **extra) -> HookInput:
    return HookInput(
        hook_event_name=extra.pop("event", "PreToolUse"),
        session_id="s1",
        cwd=str(tmp_path),
        permission_mode="default",
        tool_name="Bash",
        tool_input={"command": "rm -rf build"},
        tool_use_id="toolu_1",
        **extra,
    )


async def test_the_hook_reads_claude_codes_json_on_stdin(tmp_path: Path) -> None:
    record = tmp_path / "seen.json"
    command = _script(
        tmp_path, "record", f"import sys; open({str(record)!r}, 'w').write(sys.stdin.read())"
    )
    output = await ShellHook(command)(_input(tmp_path))
    seen = json.loads(record.read_text())
    assert output.permission_decision is None and output.errors == ()
    assert seen["hook_event_name"] == "PreToolUse" and seen["tool_name"] == "Bash"
    assert seen["tool_input"] == {"command": "rm -rf build"} and seen["tool_use_id"] == "toolu_1"
    assert {"session_id", "transcript_path", "cwd", "permission_mode"} <= set(seen)


@pytest.mark.parametrize("decision", ["allow", "deny", "ask"])
async def test_hook_specific_output_decides(tmp_path: Path, decision: str) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": f"policy says {decision}",
            "additionalContext": "remember the policy",
        }
    }
    command = _script(tmp_path, "decide", f"import json; print(json.dumps({answer!r}))")
    output = await ShellHook(command)(_input(tmp_path))
    assert output.permission_decision == decision
    assert output.reason is not None and output.reason.kind == "hook"
    assert (output.reason.detail, output.reason.source) == (f"policy says {decision}", command)
    assert output.additional_context == ("remember the policy",)


async def test_top_level_fields_and_updated_input(tmp_path: Path) -> None:
    body = (
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "command = data['tool_input']['command'].replace('rm -rf', 'echo')\n"
        "print(json.dumps({'permissionDecision': 'allow', 'updatedInput': {'command': command}}))\n"
    )
    output = await ShellHook(_script(tmp_path, "rewrite", body))(_input(tmp_path))
    assert output.permission_decision == "allow"
    assert output.updated_input == {"command": "echo build"}


async def test_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    body = "import sys; sys.stderr.write('no deleting on Fridays'); sys.exit(2)"
    command = _script(tmp_path, "block", body)
    output = await ShellHook(command)(_input(tmp_path))
    assert output.permission_decision == "deny"
    assert output.reason is not None and output.reason.detail == "no deleting on Fridays"
    after = await ShellHook(command)(_input(tmp_path, event="PostToolUse", tool_response="x"))
    assert after.permission_decision is None
    assert after.additional_context == ("no deleting on Fridays",)


async def test_other_exit_codes_are_non_blocking_errors(tmp_path: Path) -> None:
    body = "import sys; sys.stderr.write('linter crashed'); sys.exit(1)"
    output = await ShellHook(_script(tmp_path, "crash", body))(_input(tmp_path))
    assert output.permission_decision is None
    assert len(output.errors) == 1 and "exited with 1: linter crashed" in output.errors[0]
    bad = await ShellHook(_script(tmp_path, "badjson", "print('{not json')"))(_input(tmp_path))
    assert bad.permission_decision is None and "invalid JSON" in bad.errors[0]


async def test_the_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    started, marker = tmp_path / "child-started", tmp_path / "child-survived"
    child = _script(
        tmp_path,
        "child",
        f"import time; open({str(started)!r}, 'w'); time.sleep(1.5); open({str(marker)!r}, 'w')",
    )
    body = f"import subprocess, time; subprocess.Popen({child!r}.split()); time.sleep(30)"
    hook = ShellHook(_script(tmp_path, "slow", body), timeout=1.0)
    began = time.monotonic()
    output = await hook(_input(tmp_path))
    assert time.monotonic() - began < 10
    assert output.permission_decision is None and "timed out after 1s" in output.errors[0]
    assert started.exists(), "the child never started: the test proves nothing"
    # The child would have written its marker 1.5 s after it started: wait past that.
    time.sleep(max(0.0, started.stat().st_mtime + 2.0 - time.time()))
    assert not marker.exists(), "the hook's child process outlived the timeout"


async def test_several_settings_hooks_combine_deny_over_ask_over_allow(tmp_path: Path) -> None:
    def answer(decision: str) -> str:
        out = {"hookSpecificOutput": {"permissionDecision": decision}}
        return _script(tmp_path, decision, f"import json; print(json.dumps({out!r}))")

    hooks = Hooks()
    register_shell_hooks(
        hooks,
        [
            HookSpec("PreToolUse", "Bash", answer("allow")),
            HookSpec("PreToolUse", "Ba.*", answer("deny")),
            HookSpec("PreToolUse", "", answer("ask")),
            HookSpec("PreToolUse", "Edit", _script(tmp_path, "never", "raise SystemExit(2)")),
        ],
    )
    combined = await hooks.run(_input(tmp_path))
    assert combined.permission_decision == "deny"
    assert combined.reason is not None and combined.reason.source == answer("deny")


def test_legacy_and_continue_fields() -> None:
    approve = interpret("PreToolUse", 0, '{"decision": "approve"}', "", source="h")
    stop = interpret("PreToolUse", 0, '{"continue": false, "stopReason": "halt"}', "", source="h")
    weird = interpret("PreToolUse", 0, '{"permissionDecision": "maybe"}', "", source="h")
    plain = interpret("PreToolUse", 0, "all good", "", source="h")
    assert approve.permission_decision == "allow"
    assert stop.permission_decision == "deny" and stop.reason is not None
    assert stop.reason.detail == "halt"
    assert weird.permission_decision is None
    assert 'printed permissionDecision: must be "allow", "deny" or "ask"' in weird.errors[0]
    assert plain == type(plain)()
