"""Differential: the same rules and commands asked of Claude Code (from the npm registry) and
of this project; we allow at least what Claude Code allows, and every deny holds on both sides.

Claude Code 2.1.328 runs as ``claude -p --permission-mode dontAsk`` against the scripted
loopback Messages API server (`benchmarks.bench_everyday_commands.Script`: one Bash call a
turn), jailed in bubblewrap with the whole file system read-only but its own temp folders,
and every program the commands name is one that does not exist (``zq3a``...): what it
allows runs nothing. A call is denied when its result's ``permission_denials`` lists it,
allowed when it ran. The rules are generated over the rule grammar (exact lines with
Claude Code's ``\\(`` escapes, compound lines, ``:*`` and `` *`` prefixes, deny rules); each
pair's programs are its own, so no rule of one pair can decide another's command.

This project decides the same pairs with `decide()` in default and dontAsk, the Bash sandbox
off and on, before and after the session wrote a script (``analysis.py``) that none of the
commands runs. Set ``JUPYTER_TOOLHOST_CLAUDE_CODE`` to a ``claude`` binary to skip the
install.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from benchmarks.bench_claude_code import ClaudeCode, claude_env, install_claude_code, probe
from benchmarks.bench_everyday_commands import Script
from jupyter_toolhost.core.types import (
    PermissionAllow,
    PermissionDeny,
    PermissionMode,
    RuleBehavior,
)
from jupyter_toolhost.permissions import PureResolver, compile_rules, decide
from jupyter_toolhost.permissions.rules.escapes import escape
from jupyter_toolhost.testing import MessagesServer
from jupyter_toolhost.tools import builtin_tools

pytestmark = pytest.mark.timeout(900)

PROMPT = "Run the scripted everyday commands, one per turn, then say done."
CWD = "/home/user/project"
BASH = next(t for t in builtin_tools(cwd=CWD) if t.name == "Bash")


@dataclass(frozen=True, slots=True)
class Pair:
    rule: str
    behavior: Literal["allow", "deny"]
    """Where the rule goes."""
    command: str


_ARGS = ['"($i/6)"', "'a b'", "-x", "--fast", '"$(date)"', "2>&1", "out.txt", "(x)", "a:b"]


def _pairs(count: int, seed: int = 41) -> list[Pair]:
    """Generated (rule, command) pairs; every pair's programs are its own."""
    pick = random.Random(seed)
    pairs: list[Pair] = []
    for n in range(count):
        names = [f"zq{n}{c}" for c in "abc"]
        words = [pick.choice(_ARGS) for _ in range(pick.randint(0, 2))]
        words = [w for w in words if w != "(x)"] if pick.random() < 0.5 else words
        first = " ".join([names[0], *words]) if "(x)" not in words else names[0] + " -x"
        second = names[1] + " " + pick.choice(["-q", "--all", '"($n)"'])
        shape = n % 6
        if shape == 0:  # an exact rule for one command, saved with Claude Code's escapes
            pairs.append(Pair(f"Bash({escape(first)})", "allow", first))
        elif shape == 1:  # an exact rule for a compound line
            line = f"{first} && {second}"
            pairs.append(Pair(f"Bash({escape(line)})", "allow", line))
        elif shape == 2:  # a legacy prefix rule
            pairs.append(Pair(f"Bash({names[0]}:*)", "allow", f"{names[0]} --help"))
        elif shape == 3:  # a word-boundary prefix rule
            pairs.append(Pair(f"Bash({names[0]} *)", "allow", f"{names[0]} build -x"))
        elif shape == 4:  # a deny inside a line an exact rule allows
            line = f"{first} && {names[2]} -rf x"
            pairs.append(Pair(f"Bash({escape(line)})", "allow", line))
            pairs.append(Pair(f"Bash({names[2]}:*)", "deny", line))
        else:  # a plain deny
            pairs.append(Pair(f"Bash({names[0]} *)", "deny", f"{names[0]} -x"))
    return pairs


PAIRS = _pairs(36)
COMMANDS = tuple(dict.fromkeys(p.command for p in PAIRS))


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeCode]:
    given = os.environ.get("JUPYTER_TOOLHOST_CLAUDE_CODE")
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        found, why = probe(Path(given)) if given else install_claude_code(Path(folder))
        if found is None:
            pytest.fail(f"Claude Code is needed from the npm registry: {why}")
        yield found


def _rules() -> dict[RuleBehavior, list[str]]:
    rules: dict[RuleBehavior, list[str]] = {"allow": [], "deny": []}
    for pair in PAIRS:
        rules[pair.behavior].append(pair.rule)
    return rules


def _claude_code_decisions(claude: ClaudeCode) -> dict[str, str]:
    """allow / deny per command, as Claude Code decides in dontAsk, jailed."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "the jail needs bubblewrap"
    script = Script(COMMANDS)
    with (
        MessagesServer(script, sdk_types=False) as server,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as work,
    ):
        cwd = os.path.realpath(work)
        settings = Path(cwd, ".claude", "settings.json")
        settings.parent.mkdir()
        settings.write_text(json.dumps({"permissions": _rules()}), encoding="utf-8")
        trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
        Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
        Path(home, "tmp").mkdir()
        env = claude_env(server.base_url, home) | {"MAX_THINKING_TOKENS": "0"}
        jail = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        jail += ["--bind", home, home, "--bind", cwd, cwd, "--unshare-pid", "--die-with-parent"]
        argv = [*jail, str(claude.binary), "-p", PROMPT, "--output-format", "json"]
        argv += ["--permission-mode", "dontAsk", "--max-turns", str(len(COMMANDS) + 5)]
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        result = json.loads(done.stdout)
    denied = {str(d.get("tool_use_id")) for d in result.get("permission_denials") or []}
    decided: dict[str, str] = {}
    for turn, command in enumerate(COMMANDS):
        call_id = script.id_of(turn)
        assert call_id in script.results or call_id in denied, f"no result for {command!r}"
        decided[command] = "deny" if call_id in denied else "allow"
    return decided


def _ours(mode: PermissionMode, *, sandboxed: bool, written: tuple[str, ...]) -> dict[str, str]:
    resolver = PureResolver(home="/home/user")
    compiled = compile_rules({"projectSettings": _rules()}, cwd=CWD, home=resolver.home())
    decided: dict[str, str] = {}
    for command in COMMANDS:
        result = decide(
            tool=BASH,
            input=BASH.input_model.model_validate({"command": command}),
            rules=compiled,
            mode=mode,
            cwd=CWD,
            resolver=resolver,
            sandboxed=sandboxed,
            written=written,
        )
        decided[command] = (
            "allow" if isinstance(result, PermissionAllow)
            else "deny" if isinstance(result, PermissionDeny) and result.reason
            and result.reason.kind == "rule" else "ask"
        )  # fmt: skip
    return decided


def test_we_allow_what_claude_code_allows_and_every_deny_holds(claude: ClaudeCode) -> None:
    theirs = _claude_code_decisions(claude)
    denied = {p.command for p in PAIRS if p.behavior == "deny"}
    assert {c for c, d in theirs.items() if d == "deny"} >= denied, theirs
    allowed_there = [c for c, d in theirs.items() if d == "allow"]
    assert len(allowed_there) >= len(COMMANDS) // 3, theirs  # (the test means something)
    for mode in ("default", "dontAsk"):
        for sandboxed in (False, True):
            for written in ((), (f"{CWD}/analysis.py",)):
                ours = _ours(mode, sandboxed=sandboxed, written=written)
                where = (mode, sandboxed, written)
                for command in denied:
                    assert ours[command] == "deny", (where, command, ours[command])
                missing = [c for c in allowed_there if ours[c] != "allow"]
                assert not missing, (where, missing)
