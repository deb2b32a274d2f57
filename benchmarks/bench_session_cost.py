"""The input a long session is billed for: this project against Claude Code, same script.

Run with ``python -m benchmarks session_cost`` (or ``python -m benchmarks.bench_session_cost
[--turns 30 100] [--claude PATH]``). One scripted session per length: the prompt, then one
Bash call a turn (``cat page_NNN.txt``, a file of 8,000 characters: about 2,000 tokens on the
server's count), then a closing answer. It runs through this project's `Session` (built-in
tools, permission mode ``default``, the allow rule ``Bash(cat:*)``) and through Claude Code
(``claude -p ... --permission-mode default --allowedTools Bash --model claude-sonnet-4-5``,
``MAX_THINKING_TOKENS=0``, a temp ``HOME`` that trusts the folder), each against its own
loopback Messages API server (`jupyter_toolhost.testing`), in the same run.

The server bills as the API does (`testing.prompt_cache`): it reads the longest cached
prefix ending at a breakpoint an earlier request wrote, writes the prefixes its breakpoints
mark, and reports `cache_read_input_tokens`, `cache_creation_input_tokens` and
`input_tokens`. Token counts are the server's synthetic ones (bytes / 4), the same for both.
The figure is each side's **billed-equivalent input**: uncached × 1 + cache writes × 1.25 +
cache reads × 0.1, in tokens, summed over every request the client sent (side requests such
as titles included, and shown apart). The ratio is ours over Claude Code's; target ≤ 1.

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

from anthropic import AsyncAnthropic

from jupyter_toolhost.agent.session import Session
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import Usage
from jupyter_toolhost.model.pricing import billed_equivalent
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

from .bench_claude_code import (
    PACKAGE,
    ClaudeCode,
    RunFailed,
    claude_env,
    install_claude_code,
    probe,
    versions,
)
from .common import Measure, write_results

NAME = "session_cost"
TURNS = (30, 100)
MODEL_ID = "claude-sonnet-4-5"
PAGE_CHARS = 8_000
PROMPT = "Read the report with Bash, one page a turn (cat page_NNN.txt), then say done."
FINAL_TEXT = "done"
SIDE_TEXT = "Reading the report"
ALLOW_RULE = "Bash(cat:*)"
RUN_TIMEOUT_S = 900.0
TARGET_RATIO = 1.0


def write_pages(folder: Path, turns: int) -> None:
    """The report's pages: distinct text, `PAGE_CHARS` characters each."""
    for page in range(1, turns + 1):
        row = f"page {page:03d}, row {{:03d}}: revenue, cost and margin by region and month\n"
        rows = "".join(row.format(i) for i in range(PAGE_CHARS // len(row) + 1))
        Path(folder, f"page_{page:03d}.txt").write_text(rows[:PAGE_CHARS], encoding="utf-8")


@dataclass
class Reader:
    """The server's script: one ``cat`` call a turn, then the answer; requests without
    tools (a client's titles and the like) get a short text and do not advance it."""

    turns: int
    tag: str
    turn: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    side_requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def call_id(self, turn: int) -> str:
        return f"toolu_{self.tag}_{turn:03d}"

    def __call__(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            with self._lock:
                self.side_requests += 1
            return Turn([text(SIDE_TEXT)])
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content") if isinstance(last, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        with self._lock:
            answered = [
                b
                for b in blocks
                if b.get("type") == "tool_result"
                and b.get("tool_use_id") == self.call_id(self.turn)
            ]
            if self.turn > 0 and not answered:
                self.side_requests += 1
                return Turn([text(FINAL_TEXT)])
            self.results += answered
            if self.turn >= self.turns:
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

    @property
    def total(self) -> Usage:
        return self.conversation + self.side


def bill_of(server: MessagesServer) -> Bill:
    conversation, side = Usage(), Usage()
    requests = sides = 0
    for usage in server.usages:
        if usage["tools"]:
            conversation += Usage.from_dict(usage)
            requests += 1
        else:
            side += Usage.from_dict(usage)
            sides += 1
    return Bill(conversation, side, requests, sides)


async def run_ours(turns: int) -> Bill:
    reader = Reader(turns, "ours")
    with MessagesServer(reader) as server, tempfile.TemporaryDirectory() as tmp:
        write_pages(Path(tmp), turns)
        settings = Path(tmp) / ".toolhost" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"permissions": {"allow": [ALLOW_RULE]}}), "utf-8")
        client = AsyncAnthropic(base_url=server.base_url, api_key="sk-test", max_retries=0)
        session = Session(
            model=AnthropicModel(client=client),
            model_id=MODEL_ID,
            permission_mode="default",
            cwd=tmp,
            max_turns=turns + 3,
            compact_threshold_tokens=None,
        )
        try:
            await session.run(PROMPT)
        finally:
            await session.close()
            await client.close()
        reader.check()
        if server.errors:
            raise RunFailed(f"the server refused {len(server.errors)} requests: {server.errors[0]}")
        return bill_of(server)


async def run_claude(claude: ClaudeCode, turns: int) -> Bill:
    reader = Reader(turns, "cc")
    with (
        MessagesServer(reader, sdk_types=False) as server,
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as work,
    ):
        cwd = os.path.realpath(work)
        write_pages(Path(cwd), turns)
        trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
        Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
        Path(home, "tmp").mkdir()
        command = [str(claude.binary), "-p", PROMPT, "--output-format", "json"]
        command += ["--permission-mode", "default", "--allowedTools", "Bash"]
        command += ["--model", MODEL_ID, "--max-turns", str(turns + 3)]
        env = claude_env(server.base_url, home) | {"MAX_THINKING_TOKENS": "0"}
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
            raise RunFailed(f"claude exited {done.returncode}: {tail}")
        reader.check()
        if server.errors:
            raise RunFailed(f"the server refused {len(server.errors)} requests: {server.errors[0]}")
        return bill_of(server)


def row(bill: Bill) -> dict[str, float]:
    total = bill.total
    return {
        "uncached": total.input_tokens,
        "cache_writes": total.cache_creation_input_tokens,
        "cache_reads": total.cache_read_input_tokens,
        "billed_equivalent": billed_equivalent(total),
        "side_billed_equivalent": billed_equivalent(bill.side),
        "requests": bill.requests,
        "side_requests": bill.side_requests,
    }


def print_table(rows: dict[tuple[int, str], dict[str, float]], failures: dict[str, str]) -> None:
    header = [
        "turns",
        "side",
        "uncached",
        "cache writes",
        "cache reads",
        "billed-equivalent",
        "of which side requests",
        "requests (+ side)",
    ]
    lines = [header]
    for (turns, who), r in sorted(rows.items()):
        lines.append(
            [
                str(turns),
                who,
                f"{r['uncached']:,.0f}",
                f"{r['cache_writes']:,.0f}",
                f"{r['cache_reads']:,.0f}",
                f"{r['billed_equivalent']:,.0f}",
                f"{r['side_billed_equivalent']:,.0f}",
                f"{r['requests']:.0f} (+{r['side_requests']:.0f})",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print(
        "\ninput tokens billed (server's count; billed-equivalent = uncached + 1.25 x writes"
        " + 0.1 x reads)"
    )
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    for turns in sorted({t for t, _ in rows}):
        ours, theirs = rows.get((turns, "ours")), rows.get((turns, "claude_code"))
        if ours and theirs:
            ratio = ours["billed_equivalent"] / theirs["billed_equivalent"]
            print(f"{turns} turns: ours / Claude Code = {ratio:.3f} (target <= {TARGET_RATIO})")
    for key, why in failures.items():
        print(f"{key}: no figure ({why})")


async def main(lengths: list[int], claude_path: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        if claude_path:
            claude, why = probe(Path(claude_path))
        else:
            print(f"installing {PACKAGE} with npm into a temp folder ...", flush=True)
            claude, why = install_claude_code(Path(folder))
        print(f"Claude Code {claude.version}" if claude else f"no Claude Code ({why})")
        rows: dict[tuple[int, str], dict[str, float]] = {}
        failures: dict[str, str] = {}
        for turns in lengths:
            contenders: list[tuple[str, Any]] = [("ours", run_ours(turns))]
            if claude is not None:
                contenders.append(("claude_code", run_claude(claude, turns)))
            for who, running in contenders:
                print(f"  {turns} turns [{who}] ...", flush=True)
                try:
                    rows[(turns, who)] = row(await running)
                except (RunFailed, subprocess.TimeoutExpired, OSError) as exc:
                    failures[f"{turns}.{who}"] = f"{type(exc).__name__}: {exc}"
    print_table(rows, failures)
    measures: list[Measure] = []
    for (turns, who), r in sorted(rows.items()):
        label = f"{turns} turns [{who}]"
        note = "uncached + 1.25 x writes + 0.1 x reads, server's token count"
        measures.append(
            Measure(
                f"turns_{turns}.{who}.billed_equivalent",
                label,
                r["billed_equivalent"],
                "tokens",
                note,
            )
        )
    for turns in lengths:
        ours, theirs = rows.get((turns, "ours")), rows.get((turns, "claude_code"))
        if ours and theirs:
            ratio = ours["billed_equivalent"] / theirs["billed_equivalent"]
            note = f"ours / Claude Code; target <= {TARGET_RATIO}"
            measures.append(Measure(f"turns_{turns}.ratio", f"{turns} turns", ratio, "x", note))
    extra: dict[str, object] = {
        "versions": versions(claude, why),
        "page_chars": PAGE_CHARS,
        "model": MODEL_ID,
        "rows": {f"{t}.{w}": r for (t, w), r in rows.items()},
        "failures": failures,
    }
    path = write_results(NAME, measures, extra)
    print(f"written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=list(TURNS))
    parser.add_argument("--claude", help="an installed `claude` binary (skips the npm install)")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.claude))
