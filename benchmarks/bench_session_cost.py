"""The input a session is billed for: this project against Claude Code, same script.

Run with ``python -m benchmarks session_cost`` (or ``python -m benchmarks.bench_session_cost
[--scenarios turns_30 ...] [--policies cell 5m 1h] [--claude PATH]``). Three scripted
sessions (`SCENARIOS`): 30 turns of one Bash call with an 8,000-character result (about
2,000 tokens on the server's count), 100 turns of 2,000-character results, and a notebook
session of 10 cells 10 minutes apart, each cell a prompt, 3 calls of 8,000 characters and an
answer. A call is ``cat page_NNN.txt``. Each runs through this project's `Session`
(built-in tools, permission mode ``default``, the allow rule ``Bash(cat:*)``), once per
cache policy (`prompt_cache.CachePolicy`; the default one is the headline), and through
Claude Code (``claude -p ... --permission-mode default --allowedTools Bash --model
claude-sonnet-4-5``, ``MAX_THINKING_TOKENS=0``, a temp ``HOME`` that trusts the folder),
each against its own loopback Messages API server (`jupyter_toolhost.testing`), in the same
run. A cell after the first is, for Claude Code, one more ``claude -p ... --continue`` run.

The pauses are not waited for: each server's prompt cache takes its time from a clock the
benchmark moves (`MessagesServer(clock=...)`), 10 minutes between cells, a second per
request otherwise, on both sides alike.

The server bills as the API does (`testing.prompt_cache`): it reads the longest cached
prefix ending at a breakpoint an earlier request wrote, writes the prefixes its breakpoints
mark, and reports `cache_read_input_tokens`, `cache_creation_input_tokens` (with the 1-hour
part) and `input_tokens`. Token counts are the server's synthetic ones (bytes / 4), the same
for both. The figure is each side's **billed-equivalent input**: uncached × 1 + 5-minute
writes × 1.25 + 1-hour writes × 2 + reads × 0.1, in tokens, summed over every request the
client sent (side requests such as titles included, and shown apart). The ratio is ours over
Claude Code's; the targets are ≤ 1.0 at 30 turns, ≤ 0.6 at 100, ≤ 0.5 for the notebook
session (`targets.py` says why).

A run counts only if every call's result came back without an error. Claude Code is
installed on demand with npm into a temp folder (see `bench_claude_code`); if it cannot be,
this project's figures are reported alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_toolhost.model.base import Usage
from jupyter_toolhost.model.pricing import billed_equivalent
from jupyter_toolhost.model.prompt_cache import (
    CACHE_POLICIES,
    DEFAULT_CACHE_POLICY,
    CachePolicy,
)
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

from .bench_claude_code import (
    PACKAGE,
    ClaudeCode,
    RunFailed,
    claude_env,
    install_claude_code,
    ours_session,
    probe,
    versions,
)
from .common import Measure, write_results

NAME = "session_cost"
MODEL_ID = "claude-sonnet-4-5"
PAGE_CHARS = 8_000
FINAL_TEXT = "done"
SIDE_TEXT = "Reading the report"
ALLOW_RULE = "Bash(cat:*)"
RUN_TIMEOUT_S = 900.0
REQUEST_S = 1.0
"""How far each server's clock moves per request (a model answers in about a second)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scripted session: `cells` prompts, `calls` Bash calls each (one a turn), pages of
    `page_chars` characters, `pause_s` seconds between cells, and the target ratio."""

    key: str
    label: str
    cells: int
    calls: int
    page_chars: int
    pause_s: float
    target: float

    @property
    def pages(self) -> int:
        return self.cells * self.calls

    def prompt(self, cell: int) -> str:
        first = (cell - 1) * self.calls + 1
        last = first + self.calls - 1
        return (
            f"Cell {cell}: read pages {first:03d} to {last:03d} of the report with Bash, one "
            "page a turn (cat page_NNN.txt), then say done."
        )


SCENARIOS = {
    s.key: s
    for s in (
        Scenario("turns_30", "30 turns, ~8 KB results", 1, 30, 8_000, 0.0, 1.0),
        Scenario("turns_100", "100 turns, ~2 KB results", 1, 100, 2_000, 0.0, 0.6),
        Scenario(
            "cells_10", "10 cells 10 min apart, 3 calls of ~8 KB each", 10, 3, 8_000, 600.0, 0.5
        ),
    )
}


class Clock:
    """The servers' clock: moved by the benchmark, never waited for."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def write_pages(folder: Path, pages: int, chars: int = PAGE_CHARS) -> None:
    """The report's pages: distinct text, `chars` characters each."""
    for page in range(1, pages + 1):
        row = f"page {page:03d}, row {{:03d}}: revenue, cost and margin by region and month\n"
        rows = "".join(row.format(i) for i in range(chars // len(row) + 1))
        Path(folder, f"page_{page:03d}.txt").write_text(rows[:chars], encoding="utf-8")


@dataclass
class Reader:
    """The server's script: one ``cat`` call a turn, `per_cell` calls, then the answer; the
    next cell's prompt starts the next call. Requests without tools (a client's titles and
    the like) get a short text and do not advance it. Each request moves `clock` by
    `REQUEST_S`."""

    turns: int
    tag: str
    per_cell: int | None = None
    clock: Clock | None = None
    turn: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    side_requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def call_id(self, turn: int) -> str:
        return f"toolu_{self.tag}_{turn:03d}"

    def __call__(self, body: dict[str, Any]) -> Turn:
        if self.clock is not None:
            self.clock.now += REQUEST_S
        if not body.get("tools"):
            with self._lock:
                self.side_requests += 1
            return Turn([text(SIDE_TEXT)])
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content") if isinstance(last, dict) else None
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        prompted = any(
            b.get("type") == "text" and str(b.get("text", "")).startswith("Cell ") for b in blocks
        )
        per_cell = self.per_cell or self.turns
        with self._lock:
            answered = [
                b
                for b in blocks
                if b.get("type") == "tool_result"
                and b.get("tool_use_id") == self.call_id(self.turn)
            ]
            between_cells = self.turn % per_cell == 0 and self.turn < self.turns
            if answered:
                self.results += answered
                if between_cells or self.turn >= self.turns:
                    return Turn([text(FINAL_TEXT)])  # the cell's last call came back
            elif self.turn > 0 and not (prompted and between_cells):
                self.side_requests += 1
                return Turn([text(FINAL_TEXT)])
            self.turn += 1
            command = f"cat page_{self.turn:03d}.txt"
            return Turn([tool_use("Bash", {"command": command}, id=self.call_id(self.turn))])

    def check(self) -> None:
        if len(self.results) != self.turns:
            raise RunFailed(f"{len(self.results)} of {self.turns} results came back")
        errors = [r for r in self.results if r.get("is_error")]
        if errors:
            raise RunFailed(f"{len(errors)} results are errors: {str(errors[0])[:200]}")
        short = [r for r in self.results if "row" not in json.dumps(r.get("content"))]
        if short:
            raise RunFailed(f"a result does not hold the page: {str(short[0])[:200]}")


@dataclass(frozen=True, slots=True)
class Bill:
    """What one session's requests were billed, as the server reported it."""

    conversation: Usage
    side: Usage
    requests: int
    side_requests: int
    first_of_cell_reads: tuple[int, ...] = ()
    """Tokens each cell's first request read from the cache."""

    @property
    def total(self) -> Usage:
        return self.conversation + self.side


def bill_of(server: MessagesServer, cell_starts: tuple[int, ...] = ()) -> Bill:
    """The server's usages summed; `cell_starts`: how many usages there were as each cell
    began (its first conversation request is the next one with tools)."""
    conversation, side = Usage(), Usage()
    requests = sides = 0
    firsts: list[int] = []
    usages = list(server.usages)
    for start in cell_starts:
        first = next((u for u in usages[start:] if u["tools"]), None)
        firsts.append(int(first["cache_read_input_tokens"]) if first else 0)
    for usage in usages:
        if usage["tools"]:
            conversation += Usage.from_dict(usage)
            requests += 1
        else:
            side += Usage.from_dict(usage)
            sides += 1
    return Bill(conversation, side, requests, sides, tuple(firsts))


def _refused(server: MessagesServer) -> None:
    if server.errors:
        raise RunFailed(f"the server refused {len(server.errors)} requests: {server.errors[0]}")


async def run_ours(turns: int | Scenario, policy: CachePolicy = DEFAULT_CACHE_POLICY) -> Bill:
    """This project's session of `turns` (a one-cell session of that many 8 KB pages, or a
    `Scenario`) with the cache `policy`."""
    scenario = (
        turns if isinstance(turns, Scenario) else Scenario("", "", 1, turns, PAGE_CHARS, 0, 1)
    )
    clock = Clock()
    reader = Reader(scenario.pages, "ours", scenario.calls, clock)
    starts: list[int] = []
    with MessagesServer(reader, clock=clock) as server, tempfile.TemporaryDirectory() as tmp:
        write_pages(Path(tmp), scenario.pages, scenario.page_chars)
        session, client = ours_session(
            server, tmp, allow_rule=ALLOW_RULE, model_id=MODEL_ID, max_turns=scenario.calls + 3
        )
        session.settings.cache_policy = policy
        session.settings.clock = clock  # the pauses it sees are the server's
        try:
            for cell in range(1, scenario.cells + 1):
                if cell > 1:
                    clock.now += scenario.pause_s
                starts.append(len(server.usages))
                await session.run(scenario.prompt(cell))
        finally:
            await session.close()
            await client.close()
        reader.check()
        _refused(server)
        return bill_of(server, tuple(starts))


async def run_claude(claude: ClaudeCode, turns: int | Scenario) -> Bill:
    """Claude Code's session of the same script: one ``claude -p`` run per cell, the later
    ones with ``--continue``."""
    scenario = (
        turns if isinstance(turns, Scenario) else Scenario("", "", 1, turns, PAGE_CHARS, 0, 1)
    )
    clock = Clock()
    reader = Reader(scenario.pages, "cc", scenario.calls, clock)
    starts: list[int] = []
    with (
        MessagesServer(reader, sdk_types=False, clock=clock) as server,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as work,
    ):
        cwd = os.path.realpath(work)
        write_pages(Path(cwd), scenario.pages, scenario.page_chars)
        trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
        Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
        Path(home, "tmp").mkdir()
        env = claude_env(server.base_url, home) | {"MAX_THINKING_TOKENS": "0"}
        for cell in range(1, scenario.cells + 1):
            if cell > 1:
                clock.now += scenario.pause_s
            starts.append(len(server.usages))
            command = [str(claude.binary), "-p", scenario.prompt(cell), "--output-format", "json"]
            command += ["--permission-mode", "default", "--allowedTools", "Bash"]
            command += ["--model", MODEL_ID, "--max-turns", str(scenario.calls + 3)]
            if cell > 1:
                command.append("--continue")
            done = await asyncio.to_thread(
                subprocess.run,
                command,
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip()[-300:]
                raise RunFailed(f"claude exited {done.returncode} in cell {cell}: {tail}")
        reader.check()
        _refused(server)
        return bill_of(server, tuple(starts))


def row(bill: Bill) -> dict[str, Any]:
    total = bill.total
    return {
        "uncached": total.input_tokens,
        "cache_writes": total.cache_creation_input_tokens,
        "cache_writes_1h": total.cache_creation_1h_input_tokens,
        "cache_reads": total.cache_read_input_tokens,
        "billed_equivalent": billed_equivalent(total),
        "side_billed_equivalent": billed_equivalent(bill.side),
        "requests": bill.requests,
        "side_requests": bill.side_requests,
        "first_of_cell_reads": list(bill.first_of_cell_reads),
    }


def side_name(policy: CachePolicy) -> str:
    """The row name of this project under `policy` (the default one is plain "ours")."""
    return "ours" if policy == DEFAULT_CACHE_POLICY else f"ours_{policy}"


def print_table(rows: dict[tuple[str, str], dict[str, Any]], failures: dict[str, str]) -> None:
    header = [
        "session",
        "side",
        "uncached",
        "cache writes (1 h)",
        "cache reads",
        "billed-equivalent",
        "of which side requests",
        "requests (+ side)",
        "ours / Claude Code",
    ]
    lines = [header]
    for (key, who), r in sorted(rows.items()):
        theirs = rows.get((key, "claude_code"))
        ratio = ""
        if who != "claude_code" and theirs:
            ratio = f"{r['billed_equivalent'] / theirs['billed_equivalent']:.3f}"
        lines.append(
            [
                key,
                who,
                f"{r['uncached']:,.0f}",
                f"{r['cache_writes']:,.0f} ({r['cache_writes_1h']:,.0f})",
                f"{r['cache_reads']:,.0f}",
                f"{r['billed_equivalent']:,.0f}",
                f"{r['side_billed_equivalent']:,.0f}",
                f"{r['requests']:.0f} (+{r['side_requests']:.0f})",
                ratio,
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print(
        "\ninput tokens billed (server's count; billed-equivalent = uncached + 1.25 x 5-minute"
        " writes + 2 x 1-hour writes + 0.1 x reads)"
    )
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    for key in sorted({k for k, _ in rows}):
        firsts = {who: r["first_of_cell_reads"] for (k, who), r in rows.items() if k == key}
        if any(len(f) > 1 for f in firsts.values()):
            for who, reads in sorted(firsts.items()):
                print(f"{key} [{who}]: read by each cell's first request: {reads}")
    for key, why in failures.items():
        print(f"{key}: no figure ({why})")


async def main(keys: list[str], policies: list[CachePolicy], claude_path: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        if claude_path:
            claude, why = probe(Path(claude_path))
        else:
            print(f"installing {PACKAGE} with npm into a temp folder ...", flush=True)
            claude, why = install_claude_code(Path(folder))
        print(f"Claude Code {claude.version}" if claude else f"no Claude Code ({why})")
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        failures: dict[str, str] = {}
        for key in keys:
            scenario = SCENARIOS[key]
            contenders: list[tuple[str, Any]] = [
                (side_name(policy), run_ours(scenario, policy)) for policy in policies
            ]
            if claude is not None:
                contenders.append(("claude_code", run_claude(claude, scenario)))
            for who, running in contenders:
                print(f"  {scenario.label} [{who}] ...", flush=True)
                try:
                    rows[(key, who)] = row(await running)
                except (RunFailed, subprocess.TimeoutExpired, OSError) as exc:
                    failures[f"{key}.{who}"] = f"{type(exc).__name__}: {exc}"
    print_table(rows, failures)
    measures: list[Measure] = []
    note = "uncached + 1.25 x 5-min writes + 2 x 1-h writes + 0.1 x reads, server's token count"
    for (key, who), r in sorted(rows.items()):
        label = f"{SCENARIOS[key].label} [{who}]"
        measures.append(
            Measure(f"{key}.{who}.billed_equivalent", label, r["billed_equivalent"], "tokens", note)
        )
    for key in keys:
        scenario = SCENARIOS[key]
        ours, theirs = rows.get((key, "ours")), rows.get((key, "claude_code"))
        if ours and theirs:
            ratio = ours["billed_equivalent"] / theirs["billed_equivalent"]
            why = f"ours / Claude Code; target <= {scenario.target}"
            measures.append(Measure(f"{key}.ratio", scenario.label, ratio, "x", why))
    extra: dict[str, object] = {
        "versions": versions(claude, why),
        "model": MODEL_ID,
        "scenarios": {
            k: {"label": s.label, "page_chars": s.page_chars, "target": s.target}
            for k, s in SCENARIOS.items()
            if k in keys
        },
        "default_policy": DEFAULT_CACHE_POLICY,
        "rows": {f"{k}.{w}": r for (k, w), r in rows.items()},
        "failures": failures,
    }
    path = write_results(NAME, measures, extra)
    print(f"written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument(
        "--policies",
        nargs="+",
        choices=list(CACHE_POLICIES),
        default=list(CACHE_POLICIES),
        help="this project's cache policies to run (each is a row; the default is the headline)",
    )
    parser.add_argument("--claude", help="an installed `claude` binary (skips the npm install)")
    args = parser.parse_args()
    asyncio.run(main(args.scenarios, args.policies, args.claude))
