"""Everyday data-science commands: which ones this project asks about, and which Claude Code does.

Run with ``python -m benchmarks everyday_commands`` (or ``python -m
benchmarks.bench_everyday_commands [--claude PATH]``). The commands and the project are
`tests/everyday_commands.py`'s: a small analysis repository with deny rules elsewhere
(``Read(./secrets/**)``, ``Edit(./protected/**)``, ``Bash(rm:*)``) and the allow rules
``Bash(python3:*)``, ``Bash(python:*)``; permission mode ``default``.

- This project: the engine's decision for each command (`Session.check`, nothing run), with
  the Bash sandbox off and on (bubblewrap; "not measured" where it cannot start).
- Claude Code: the same project with the same rules in ``.claude/settings.json`` (the folder
  trusted in ``$HOME/.claude.json``), run as ``claude -p ... --output-format json
  --permission-mode default`` against a scripted loopback Messages API server that asks for
  one Bash call per turn, each command in turn. A command counts as asked when Claude Code
  lists it in its result's ``permission_denials`` (in ``-p`` mode an "ask" cannot be
  answered and is refused), as allowed when it ran. Installed on demand with npm into a temp
  folder; if that fails, the benchmark says why and reports this project's decisions alone.

This project is also asked once the session has written ``analysis.py``, a ``Makefile`` and
``notes.md`` (``WRITTEN``): Claude Code does not track what a session wrote, so its column
stands for both.

Prints the side-by-side table and writes ``everyday_commands.json`` with every row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_toolhost.testing import MessagesServer, Turn, text, thinking, tool_use

from .bench_claude_code import ClaudeCode, claude_env, install_claude_code, probe
from .common import Measure, write_results

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from everyday_commands import ALLOW, COMMANDS, CONTROLS, DENY, WRITTEN, build_project

NAME = "everyday_commands"
PROMPT = "Run the scripted everyday commands, one per turn, then say done."
RUN_TIMEOUT_S = 600.0


# --- this project -----------------------------------------------------------------------


def ours(sandbox: bool, *, after_writing: bool = False) -> dict[str, str] | str:
    """Default mode's decision per command (and per control), or why it was not measured.
    `after_writing`: once the session has written `WRITTEN` (a script, a Makefile, notes),
    which Claude Code does not track."""
    from dataclasses import replace

    from jupyter_toolhost import Session
    from jupyter_toolhost.core.context import SandboxOptions
    from jupyter_toolhost.model.anthropic_model import AnthropicModel
    from jupyter_toolhost.tools.bash.sandbox import bwrap_problem

    if sandbox and (problem := bwrap_problem()[1]) is not None:
        return f"not measured: {problem}"
    with tempfile.TemporaryDirectory() as tmp:
        project = build_project(Path(tmp, "project"), settings_dir=".toolhost")
        home = Path(tmp, "home")
        home.mkdir()
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(home)
        try:
            session = Session(
                model=AnthropicModel(base_url="http://127.0.0.1:9", api_key="unused"),
                model_id="claude-sonnet-4-5",
                cwd=project,
                trust_folder=True,  # (the project's settings are the benchmark's own)
                write_transcript=False,
                sandbox=SandboxOptions(enabled=sandbox),
            )
            if after_writing:
                paths = tuple(str(project / name) for name in WRITTEN)
                session.context.set_app_state(lambda state: replace(state, written_paths=paths))
            decided = {}
            for command in (*COMMANDS, *CONTROLS):
                report = session.check("Bash", {"command": command})
                decided[command] = report.mode("default").behavior
            asyncio.run(session.close())
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved
    return decided


# --- Claude Code --------------------------------------------------------------------------


@dataclass
class Script:
    """The server's side: one Bash call per turn, each command in turn, then the answer."""

    commands: tuple[str, ...]
    turn: int = 0
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    side_requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def id_of(self, turn: int) -> str:
        return f"toolu_everyday_{turn:03d}"

    def __call__(self, body: dict[str, Any]) -> Turn:
        messages = body.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        content = last.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        with self._lock:
            if not body.get("tools"):
                self.side_requests += 1
                return Turn([text("Everyday commands")])
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == self.id_of(
                    self.turn
                ):
                    self.results[self.id_of(self.turn)] = block
                    self.turn += 1
                    break
            else:
                if self.turn or not _is_prompt(last, blocks):
                    self.side_requests += 1
                    return Turn([text("done")])
            if self.turn >= len(self.commands):
                return Turn([text("done")])
            call = tool_use("Bash", {"command": self.commands[self.turn]}, id=self.id_of(self.turn))
            config = body.get("thinking")
            if isinstance(config, dict) and config.get("type") not in (None, "disabled"):
                return Turn([thinking("Running the next command."), call])
            return Turn([call])


def _is_prompt(last: dict[str, Any], blocks: list[dict[str, Any]]) -> bool:
    content = last.get("content")
    texts = [content] if isinstance(content, str) else [str(b.get("text")) for b in blocks]
    return last.get("role") == "user" and any(PROMPT in t for t in texts)


def claude_code(claude: ClaudeCode) -> dict[str, str] | str:
    """Claude Code's outcome per command (``allow`` or ``ask``), or why there is none."""
    commands = (*COMMANDS, *CONTROLS)
    script = Script(commands)
    with (
        MessagesServer(script, sdk_types=False) as server,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as work,
    ):
        cwd = os.path.realpath(build_project(Path(work, "project"), settings_dir=".claude"))
        trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
        Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
        Path(home, "tmp").mkdir()
        env = claude_env(server.base_url, home) | {"MAX_THINKING_TOKENS": "0"}
        argv = [str(claude.binary), "-p", PROMPT, "--output-format", "json"]
        argv += ["--permission-mode", "default", "--max-turns", str(len(commands) + 5)]
        try:
            done = subprocess.run(
                argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"claude did not finish: {exc}"
        try:
            result = json.loads(done.stdout)
        except json.JSONDecodeError:
            tail = (done.stderr or done.stdout).strip()[-300:]
            return f"claude exited {done.returncode} without a JSON result: {tail}"
    denied = {str(d.get("tool_use_id")) for d in result.get("permission_denials") or []}
    outcomes: dict[str, str] = {}
    for turn, command in enumerate(commands):
        call_id = script.id_of(turn)
        if call_id in denied:
            said = json.dumps(script.results.get(call_id, {}).get("content", ""))
            outcomes[command] = "deny" if "has been denied" in said else "ask"
            print(f"  {command}: {said[:160]}")
        elif call_id in script.results:
            outcomes[command] = "allow"
        else:
            outcomes[command] = "no result"
    return outcomes


# --- report -------------------------------------------------------------------------------


def asked(decided: dict[str, str] | str) -> int | None:
    """How many of the everyday commands were not allowed (asked or refused)."""
    if isinstance(decided, str):
        return None
    return sum(decided.get(c) != "allow" for c in COMMANDS)


def print_table(columns: dict[str, dict[str, str] | str]) -> None:
    heads = list(columns)
    rows = [["command", *heads]]
    for command in (*COMMANDS, *CONTROLS):
        cells = ["-" if isinstance(v, str) else v.get(command, "-") for v in columns.values()]
        rows.append([command, *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for number, row in enumerate(rows):
        if number == len(COMMANDS) + 1:
            print("-- controls (must not be allowed) --")
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    for head, value in columns.items():
        count = asked(value)
        shown = value if count is None else f"{count} of {len(COMMANDS)} not allowed"
        print(f"{head}: {shown}")


def main(claude_path: str | None) -> None:
    columns: dict[str, dict[str, str] | str] = {
        "ours, sandbox off": ours(sandbox=False),
        "ours, sandbox on": ours(sandbox=True),
        "ours, sandbox off, after writing": ours(sandbox=False, after_writing=True),
        "ours, sandbox on, after writing": ours(sandbox=True, after_writing=True),
    }
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        if claude_path:
            claude, why = probe(Path(claude_path))
        else:
            print("installing Claude Code with npm into a temp folder ...", flush=True)
            claude, why = install_claude_code(Path(folder))
        if claude is None:
            print(f"Claude Code could not be installed ({why}); this project's decisions alone.")
            columns["Claude Code"] = f"not measured: {why}"
        else:
            print(f"Claude Code {claude.version}", flush=True)
            columns["Claude Code"] = claude_code(claude)
    print_table(columns)
    keys = {
        "ours, sandbox off": "ours_off",
        "ours, sandbox on": "ours_on",
        "ours, sandbox off, after writing": "ours_off_written",
        "ours, sandbox on, after writing": "ours_on_written",
        "Claude Code": "cc",
    }
    measures = []
    for head, value in columns.items():
        count = asked(value)
        if count is not None:
            note = f"of {len(COMMANDS)} everyday commands, default mode"
            measures.append(Measure(f"{keys[head]}.asked", f"asked: {head}", count, "", note))
    write_results(
        NAME,
        measures,
        {
            "versions": {"claude-code": claude.version if claude else f"not installed: {why}"},
            "rules": {"allow": ALLOW, "deny": DENY},
            "mode": "default",
            "columns": {keys[h]: h for h in columns},
            "commands": list(COMMANDS),
            "controls": list(CONTROLS),
            "decisions": {keys[h]: v for h, v in columns.items()},
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--claude", help="an installed `claude` binary (skips the npm install)")
    main(parser.parse_args().claude)
