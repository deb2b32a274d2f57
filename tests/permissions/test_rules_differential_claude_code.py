"""Differential: the same rules and commands asked of Claude Code (from the npm registry) and
of this project; we allow at least what Claude Code allows, except where a documented
stricter rule of ours names the reason, and every deny holds on both sides.

The pairs are drawn by hypothesis over two grammars:

- **bash**: words of every quoting kind (single, double with parameters and nested commands,
  ``$'...'``, backslash escapes), parameters and their operators, arithmetic, globs, brace
  expansion, redirections and here-strings, assignments before a command; lines of one or
  two commands joined by ``&&``, ``||``, ``;``, ``|`` or a newline, in subshells, groups,
  ``for`` loops, ``if`` conditions and negations;
- **rules**: an exact rule for the whole line saved with Claude Code's ``\\(`` escapes,
  legacy ``:*`` prefix rules and word-boundary `` *`` rules for each of its programs, and
  deny rules for one program inside an allowed line or for a plain command.

The issue's own shapes are an explicit example. Every program a command names is a name that
does not exist (``zq...``), so what Claude Code allows runs nothing, and each pair's programs
are its own, so no rule of one pair decides another's command.

Claude Code 2.1 runs as ``claude -p --permission-mode default`` and ``dontAsk`` against the
scripted loopback Messages API server (one Bash call a turn), jailed in bubblewrap with the
whole file system read-only but its own temp folders. A call is denied when its result's
``permission_denials`` lists it (in ``-p`` an "ask" can't be answered and is refused),
allowed when it ran. This project decides the same pairs with `decide()` in default and
dontAsk, the Bash sandbox off and on, before and after the session wrote a script
(``analysis.py``) that none of the commands runs.

In CI the examples are derandomized (the same pairs each run);
``JUPYTER_TOOLHOST_DIFFERENTIAL_EXAMPLES=N`` draws N fresh batches to explore. Set
``JUPYTER_TOOLHOST_CLAUDE_CODE`` to a ``claude`` binary to skip the install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

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

pytestmark = pytest.mark.timeout(1800)

PROMPT = "Run the scripted everyday commands, one per turn, then say done."
CWD = "/home/user/project"
BASH = next(t for t in builtin_tools(cwd=CWD) if t.name == "Bash")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "permissions-shell.md"

STRICTER = {
    "The command can't be checked before it runs":
        "while any deny rule is in force, a line the analysis can't split",
    "a prefix rule does not vouch for that":
        "a prefix rule does not vouch for what follows it that the check can't follow",
    "names a file that is only known when it runs":
        "while any deny rule is in force, a command that names a file only known when it runs",
    "this session wrote": "code this session wrote",
    "the file may have changed": "a program given as a path",
}  # fmt: skip
"""Where we may ask although Claude Code allows: a phrase of our reason -> the sentence of
docs/permissions-shell.md's "stricter than Claude Code" list that names it."""

# --- the bash grammar ---------------------------------------------------------------------
# Programs are placeholders <0> <1> <2>, given each pair's own names once it is drawn.

_WORDS = (
    "-x", "--fast", "-j4", "--out=dir", "-n3", "a:b", "key=value", "x,y", "out.txt",
    "data/in.csv", "*.py", "data/*.csv", "v?", "{a,b}", "$HOME", "$i", "${x}", "${x:-y}",
    "${#x}", "$((1+2))", "$'a\\tb'", "2>&1", ">/dev/null", "2>/dev/null", "> out.txt",
    ">> log.txt", "< in.txt", "<<< 'a b'", "--", "''", '""', "%s", "@", "a=b=c",
)  # fmt: skip
_IN_DOUBLE = ("a b", "($i/6)", "$i", "${x:-y}", '\\"', "...", ":", "`", "$(<2> -q)", "!")

word = st.one_of(
    st.sampled_from(_WORDS),
    st.from_regex(r"[a-z0-9._/-]{1,8}", fullmatch=True).filter(lambda w: not w.startswith("/")),
    st.from_regex(r"[a-z0-9 $()\"\\:/.*;&|-]{0,10}", fullmatch=True).map(lambda t: f"'{t}'"),
    st.lists(st.sampled_from(_IN_DOUBLE), max_size=3).map(lambda p: '"' + "".join(p) + '"')
    .filter(lambda w: w.count("`") != 1),
    st.sampled_from("()$ ;&|*?'\"").map(lambda c: "\\" + c),
)  # fmt: skip
"""One bash word: its quoting, expansions and redirections."""


def simple(program: str) -> st.SearchStrategy[str]:
    """`program` with up to three words, sometimes after an assignment."""
    assignment = st.sampled_from(["", "", "", "LC_ALL=C ", "A=1 B='x y' "])
    words = st.lists(word, max_size=3)
    return st.builds(lambda a, w: " ".join([a + program, *w]), assignment, words)


first, second = simple("<0>"), simple("<1>")
line = st.one_of(
    first,
    st.builds(lambda a, op, b: f"{a} {op} {b}", first, st.sampled_from(["&&", "||", ";", "|"]),
              second),
    st.builds(lambda a, b: f"{a}\n{b}", first, second),
    first.map(lambda a: f"( {a} )"),
    first.map(lambda a: f"{{ {a}; }}"),
    first.map(lambda a: f"for i in 1 2; do {a}; done"),
    st.builds(lambda a, b: f"if {b}; then {a}; fi", first, second),
    first.map(lambda a: f"! {a}"),
)  # fmt: skip
"""A command line of one or two commands in the constructs bash joins them with."""


# --- the rule grammar ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    rules: tuple[tuple[Literal["allow", "deny"], str], ...]
    command: str
    denied: bool = False
    """A deny rule names one of the command's programs."""


def _programs(text: str) -> list[str]:
    return sorted(set(re.findall(r"<\d>", text)))


def _pair(shape: str, text: str, deny_of: int) -> Pair:
    programs = _programs(text)
    exact = ("allow", f"Bash({escape(text)})")
    if shape == "exact":
        return Pair((exact,), text)
    if shape == "prefix":
        return Pair(tuple(("allow", f"Bash({p}:*)") for p in programs), text)
    if shape == "wildcard":
        return Pair(tuple(("allow", f"Bash({p} *)") for p in programs), text)
    target = programs[deny_of % len(programs)]
    if shape == "deny inside":
        return Pair((exact, ("deny", f"Bash({target}:*)")), text, denied=True)
    return Pair((("deny", f"Bash({target} *)"),), text, denied=True)  # a plain deny


pair = st.builds(
    _pair,
    st.sampled_from(["exact", "exact", "prefix", "wildcard", "deny inside", "deny plain"]),
    line,
    st.integers(0, 2),
)
batch = st.lists(pair, min_size=24, max_size=24)

WAITING = '<0> "Waiting... ($i/6)"'
ISSUE_SHAPES = [
    Pair((("allow", "Bash(" + escape(WAITING) + ")"),), WAITING),
    Pair(
        (("allow", "Bash(<0> -j4 && <1> --output-on-failure 2>&1)"),),
        "<0> -j4 && <1> --output-on-failure 2>&1",
    ),
    Pair((("allow", "Bash(shopt -s dotglob)"),), "shopt -s dotglob"),
    Pair(
        (("allow", "Bash(<0>:*)"),),
        '<0> -sL "https://raw.githubusercontent.com/o/r/main/.claude/skills/s/SKILL.md"',
    ),
    Pair((("allow", "Bash(<0>:*)"),), '<0> -rn "``" "D:/client/app/"'),
    Pair((("allow", "Bash(./<0> build:*)"),), "./<0> build --help"),
    Pair((("allow", "Bash(<0> *)"), ("deny", "Bash(<1> push *)")), "<0> --version"),
    Pair((("allow", "Bash(<0> -x && <1> -rf x)"), ("deny", "Bash(<1>:*)")), "<0> -x && <1> -rf x",
         True),
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Named:
    """A batch with each pair's placeholders given names of its own."""

    pairs: tuple[Pair, ...]

    @classmethod
    def of(cls, pairs: list[Pair], tag: str) -> Named:
        def name(text: str, n: int) -> str:
            return re.sub(r"<(\d)>", lambda m: f"zq{tag}{n}{'abc'[int(m[1])]}", text)

        named = [
            Pair(tuple((b, name(r, n)) for b, r in p.rules), name(p.command, n), p.denied)
            for n, p in enumerate(pairs)
        ]
        seen: set[str] = set()
        unique = [p for p in named if not (p.command in seen or seen.add(p.command))]
        return cls(tuple(unique))

    def rules(self) -> dict[RuleBehavior, list[str]]:
        out: dict[RuleBehavior, list[str]] = {"allow": [], "deny": []}
        for p in self.pairs:
            for behavior, rule in p.rules:
                out[behavior].append(rule)
        return out

    def commands(self) -> tuple[str, ...]:
        return tuple(p.command for p in self.pairs)


# --- the two sides ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeCode]:
    given_binary = os.environ.get("JUPYTER_TOOLHOST_CLAUDE_CODE")
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        path = Path(given_binary) if given_binary else None
        found, why = probe(path) if path else install_claude_code(Path(folder))
        if found is None:
            pytest.fail(f"Claude Code is needed from the npm registry: {why}")
        yield found


def claude_code_decisions(claude: ClaudeCode, batch: Named, mode: PermissionMode) -> dict[str, str]:
    """allow / deny per command, as Claude Code decides in `mode`, jailed."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "the jail needs bubblewrap"
    commands = batch.commands()
    script = Script(commands)
    with (
        MessagesServer(script, sdk_types=False) as server,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as work,
    ):
        cwd = os.path.realpath(work)
        settings_file = Path(cwd, ".claude", "settings.json")
        settings_file.parent.mkdir()
        settings_file.write_text(json.dumps({"permissions": batch.rules()}), encoding="utf-8")
        trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
        Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
        Path(home, "tmp").mkdir()
        env = claude_env(server.base_url, home) | {"MAX_THINKING_TOKENS": "0"}
        jail = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        jail += ["--bind", home, home, "--bind", cwd, cwd, "--unshare-pid", "--die-with-parent"]
        argv = [*jail, str(claude.binary), "-p", PROMPT, "--output-format", "json"]
        argv += ["--permission-mode", mode, "--max-turns", str(len(commands) + 5)]
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
        assert done.stdout.strip(), done.stderr[-2000:]
        result = json.loads(done.stdout)
    denied = {str(d.get("tool_use_id")) for d in result.get("permission_denials") or []}
    decided: dict[str, str] = {}
    for turn, command in enumerate(commands):
        call_id = script.id_of(turn)
        assert call_id in script.results or call_id in denied, f"no result for {command!r}"
        decided[command] = "deny" if call_id in denied else "allow"
    return decided


@dataclass(frozen=True, slots=True)
class Ours:
    decision: Literal["allow", "ask", "deny"]
    why: str
    """The reason shown (empty for an allow)."""


def our_decisions(
    batch: Named, mode: PermissionMode, *, sandboxed: bool, written: tuple[str, ...]
) -> dict[str, Ours]:
    resolver = PureResolver(home="/home/user")
    compiled = compile_rules({"projectSettings": batch.rules()}, cwd=CWD, home=resolver.home())
    decided: dict[str, Ours] = {}
    for command in batch.commands():
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
        why = str(result.reason) if result.reason else ""
        if isinstance(result, PermissionAllow):
            decided[command] = Ours("allow", "")
        elif isinstance(result, PermissionDeny) and result.reason and result.reason.kind == "rule":
            decided[command] = Ours("deny", why)
        else:
            decided[command] = Ours("ask", why or getattr(result, "message", ""))
    return decided


def _compare(claude: ClaudeCode, pairs: list[Pair], tag: str) -> None:
    named = Named.of(pairs, tag)
    denied = {p.command for p in named.pairs if p.denied}
    with ThreadPoolExecutor(2) as pool:
        modes: tuple[PermissionMode, ...] = ("default", "dontAsk")
        runs = [pool.submit(claude_code_decisions, claude, named, m) for m in modes]
        theirs = dict(zip(modes, (r.result() for r in runs), strict=True))
    allowed_count = sum(d == "allow" for d in theirs["dontAsk"].values())
    assert allowed_count >= 1, theirs  # (the settings were read: the comparison means something)
    for mode, decided in theirs.items():
        held = {c for c, d in decided.items() if d == "deny"}
        assert held >= denied, ("Claude Code", mode, sorted(denied - held))
        allowed_there = [c for c, d in decided.items() if d == "allow"]
        for sandboxed in (False, True):
            for written in ((), (f"{CWD}/analysis.py",)):
                ours = our_decisions(named, mode, sandboxed=sandboxed, written=written)
                where = (mode, f"sandbox {'on' if sandboxed else 'off'}", written)
                for command in denied:
                    assert ours[command].decision == "deny", (where, command, ours[command])
                explained = [
                    next(k for k in STRICTER if k in ours[c].why)
                    for c in allowed_there
                    if ours[c].decision != "allow" and any(s in ours[c].why for s in STRICTER)
                ]
                _tally(mode, sandboxed, written, len(decided), len(allowed_there), explained)
                unexplained = {
                    c: ours[c].why
                    for c in allowed_there
                    if ours[c].decision != "allow" and not any(s in ours[c].why for s in STRICTER)
                }
                assert not unexplained, (where, unexplained)


def _tally(
    mode: str,
    sandboxed: bool,
    written: tuple[str, ...],
    asked: int,
    allowed: int,
    explained: list[str],
) -> None:
    """One line of figures per comparison into ``JUPYTER_TOOLHOST_DIFFERENTIAL_TALLY`` (a
    JSON-lines file), when it is set: how often Claude Code allowed, and which stricter
    rule explained each difference."""
    if target := os.environ.get("JUPYTER_TOOLHOST_DIFFERENTIAL_TALLY"):
        row = {"mode": mode, "sandbox": sandboxed, "written": bool(written), "commands": asked,
               "claude_code_allowed": allowed, "stricter": explained}  # fmt: skip
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def test_every_stricter_reason_is_in_the_docs() -> None:
    text = DOCS.read_text(encoding="utf-8")
    stricter = text.split("### Where this is stricter than Claude Code", 1)[1].split("\n## ", 1)[0]
    for sentence in STRICTER.values():
        assert sentence in re.sub(r"\s+", " ", stricter.replace("*", "")).lower(), sentence


_EXAMPLES = int(os.environ.get("JUPYTER_TOOLHOST_DIFFERENTIAL_EXAMPLES", "0"))


@settings(
    max_examples=_EXAMPLES or 3,
    derandomize=not _EXAMPLES,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(pairs=ISSUE_SHAPES)
@given(pairs=batch)
def test_we_allow_what_claude_code_allows_and_every_deny_holds(
    claude: ClaudeCode, pairs: list[Pair]
) -> None:
    _compare(claude, pairs, tag=f"{abs(hash(tuple(pairs))) % 10_000:04d}")
