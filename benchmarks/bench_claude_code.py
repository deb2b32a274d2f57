"""This project's Bash against Claude Code's, on the same scripted message of real Bash calls.

Run with ``python -m benchmarks claude_code`` (or ``python -m benchmarks.bench_claude_code
[--repeats N] [--claude PATH]``). Two streamed scenarios, each one assistant message whose
Bash tool_use blocks stream 0.05 s apart from the loopback Messages API server
(`jupyter_toolhost.testing`): A, ten ``sleep 0.1``; B, ``sleep 1`` then nine ``sleep 0.1``.
And two N-turn ones, the peers benchmark's 50 and 100 turns with one ``sleep 0`` per turn
(100 turns runs 3 times; longer ones would take minutes per run, as every turn is a real
Bash process on both sides).
They run through this project's `Session` (built-in tools, permission mode ``default``, the
allow rule ``Bash(sleep:*)`` in the working directory's ``.toolhost/settings.json``) and
through Claude Code (``claude -p ... --output-format json --permission-mode default
--allowedTools Bash``, ``HOME`` a temp folder whose ``.claude.json`` trusts the working
directory), against the same scripted server, runs interleaved.

The figure is measured in the server, identically for both: from receiving the request whose
answer asks for the (first turn's) calls to receiving the request that carries the (last
turn's) tool_results (each stamped when the server's script is consulted, after the body is
read and validated). With thinking on in a request (Claude Code turns it on), the message of
calls starts with a thinking block, as the API requires; the block interval it adds before
the calls is subtracted, so the calls start at the same offset for both. A run
counts only if the requests carry one result per call and none is an error. Requests
without ``tools`` (Claude Code's titles and the like) are side requests: they get a short
text and do not advance the script. The ratio is this project's figure over Claude Code's
(the target is at most 1.05); the physical limit is when the last call would end if each
started as its block completed.

Claude Code is installed on demand with npm into a temp folder (373 MB, about 10 s) and
removed afterwards; its licence is not open, so no test needs it. If it cannot be installed,
the benchmark says so and reports this project's figures alone.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic

from jupyter_toolhost.agent.session import Session
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, thinking, tool_use
from jupyter_toolhost.testing.messages_server import ContentBlock

from .common import Measure, median, write_results
from .peers.script import streamed_limit

NAME = "claude_code"
REPEATS = 5
PACKAGE = "@anthropic-ai/claude-code@2.1.328"
INSTALL_TIMEOUT_S = 600.0
RUN_TIMEOUT_S = 180.0
BLOCK_DELAY_S = 0.05
TARGET_RATIO = 1.05
MODEL_ID = "claude-sonnet-4-5"
PROMPT = "Run the scripted Bash calls, then say done."
FINAL_TEXT = "done"
SIDE_TEXT = "Scripted calls"
ALLOW_RULE = "Bash(sleep:*)"
TURNS = ((50, None), (100, 3))
"""The N-turn conversations (one ``sleep 0`` per turn) and their repeats (None: all)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """`turns` assistant messages of Bash calls (blocks streamed `block_delay` apart), then
    the answer."""

    key: str
    label: str
    sleeps: tuple[str, ...]
    """The argument of each call's ``sleep`` command, as written in the command."""
    turns: int = 1
    block_delay: float = BLOCK_DELAY_S
    repeats: int | None = None  # fewer repeats than the benchmark's for this scenario

    @property
    def commands(self) -> list[str]:
        return [f"sleep {s}" for s in self.sleeps]

    @property
    def calls(self) -> int:
        return self.turns * len(self.sleeps)

    @property
    def physical_limit(self) -> float:
        one = streamed_limit(tuple(float(s) for s in self.sleeps), self.block_delay)
        return one * self.turns


SCENARIOS = (
    Scenario("ten_sleeps", "A: 10 x sleep 0.1", ("0.1",) * 10),
    Scenario("long_first", "B: sleep 1 + 9 x sleep 0.1", ("1",) + ("0.1",) * 9),
    *(
        Scenario(f"turns_{n}", f"{n} turns x 1 Bash sleep 0", ("0",), n, 0.0, repeats)
        for n, repeats in TURNS
    ),
)
WARM_UP = Scenario("warm_up", "warm-up", ("0",) * 2)


# --- the scripted server's side ---------------------------------------------------------


@dataclass
class Conductor:
    """The server's script for one run, which also times it (`MessagesServer` calls it from
    its handler threads, once per valid `/v1/messages` request).

    With thinking on in a request (Claude Code's default), each message of calls starts with
    a thinking block, as the API requires of a tool-use chain; that block streams one block
    interval before the calls, and the figure subtracts that interval, so both contenders'
    calls start at the same offset from their request."""

    scenario: Scenario
    tag: str
    asked_at: float | None = None
    answered_at: float | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0  # the turn whose results the script waits for
    lead: float = 0.0
    """Seconds added before the calls (the thinking blocks' block intervals), subtracted."""
    side_requests: int = 0
    rejected: int = 0
    """Requests the server refused as invalid (they never reach the script)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ids_of(self, turn: int) -> list[str]:
        return [f"toolu_{self.tag}_{turn:03d}_{i:02d}" for i in range(len(self.scenario.sleeps))]

    @property
    def ids(self) -> list[str]:
        """Every call's id, all turns."""
        return [i for turn in range(self.scenario.turns) for i in self.ids_of(turn)]

    def __call__(self, body: dict[str, Any]) -> Turn:
        received = time.perf_counter()
        messages = body.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        content = last.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        results = [b for b in blocks if b.get("type") == "tool_result"]
        with self._lock:
            waiting = set(self.ids_of(self.turn))
            ours = {str(b.get("tool_use_id")) for b in results} & waiting
            if body.get("tools") and ours and self.asked_at is not None:
                self.results += [b for b in results if str(b.get("tool_use_id")) in waiting]
                self.turn += 1
                if self.turn < self.scenario.turns:
                    return self._calls(body)
                if self.answered_at is None:
                    self.answered_at = received
                return Turn([text(FINAL_TEXT)])
            if body.get("tools") and self.asked_at is None and self._is_prompt(last, blocks):
                self.asked_at = received
                return self._calls(body)
            self.side_requests += 1
        return Turn([text(SIDE_TEXT if not body.get("tools") else FINAL_TEXT)])

    def _calls(self, body: dict[str, Any]) -> Turn:
        """The message of calls of turn `self.turn`."""
        calls: list[ContentBlock] = [
            tool_use("Bash", {"command": c}, id=i)
            for c, i in zip(self.scenario.commands, self.ids_of(self.turn), strict=True)
        ]
        config = body.get("thinking")
        if isinstance(config, dict) and config.get("type") not in (None, "disabled"):
            calls.insert(0, thinking("Running the scripted calls."))
            self.lead += self.scenario.block_delay
        return Turn(calls, block_delay=self.scenario.block_delay)

    @staticmethod
    def _is_prompt(last: dict[str, Any], blocks: list[dict[str, Any]]) -> bool:
        if last.get("role") != "user":
            return False
        content = last.get("content")
        texts = [content] if isinstance(content, str) else [str(b.get("text")) for b in blocks]
        return any(PROMPT in t for t in texts)

    def figure(self) -> float:
        """Seconds from the asking request to the last results (less `lead`); raises if the
        run did not count."""
        if self.asked_at is None:
            raise RunFailed("the client never sent the request that asks for the calls")
        if self.answered_at is None and self.turn == 0:
            raise RunFailed("the client never sent the calls' tool_results")
        if self.answered_at is None:
            turns = f"{self.turn} of {self.scenario.turns} turns"
            raise RunFailed(f"the client sent the tool_results of {turns} only")
        by_id = {str(r.get("tool_use_id")): r for r in self.results}
        missing = [i for i in self.ids if i not in by_id]
        errors = [r for r in self.results if r.get("is_error")]
        if missing or errors:
            shown = json.dumps(errors[0].get("content"))[:200] if errors else ""
            raise RunFailed(
                f"{len(missing)} results missing, {len(errors)} errors {shown}".rstrip()
            )
        return self.answered_at - self.asked_at - self.lead


class RunFailed(Exception):
    """A run that cannot give a figure (it is reported, never counted)."""


# --- the contenders ---------------------------------------------------------------------


def ours_session(
    server: MessagesServer, folder: str, *, allow_rule: str, model_id: str, max_turns: int
) -> tuple[Session, AsyncAnthropic]:
    """This project's `Session` as the comparisons with Claude Code run it (here and in
    `bench_session_cost`): the real anthropic client on the loopback `server`, the default
    permission mode with `allow_rule` in the project's settings in `folder`, no compaction.
    The caller closes both."""
    settings = Path(folder) / ".toolhost" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": [allow_rule]}}), "utf-8")
    client = AsyncAnthropic(base_url=server.base_url, api_key="sk-test", max_retries=0)
    session = Session(
        model=AnthropicModel(client=client),
        model_id=model_id,
        permission_mode="default",
        cwd=folder,
        max_turns=max_turns,
        compact_threshold_tokens=None,
    )
    return session, client


async def run_ours(scenario: Scenario, tag: str) -> Conductor:
    """This project's `Session`, built-in tools, the allow rule in the project's settings."""
    conductor = Conductor(scenario, tag)
    with MessagesServer(conductor) as server, tempfile.TemporaryDirectory() as tmp:
        session, client = ours_session(
            server, tmp, allow_rule=ALLOW_RULE, model_id=MODEL_ID, max_turns=scenario.turns + 3
        )
        try:
            if session.settings_problems:
                raise RunFailed(f"settings problems: {session.settings_problems}")
            await session.run(PROMPT)
        finally:
            await session.close()
            await client.close()
        conductor.rejected = len(server.errors)
    return conductor


@dataclass(frozen=True, slots=True)
class ClaudeCode:
    """An installed Claude Code binary, run as a black box."""

    binary: Path
    version: str

    async def run(self, scenario: Scenario, tag: str) -> Conductor:
        conductor = Conductor(scenario, tag)
        with (
            MessagesServer(conductor, sdk_types=False) as server,
            tempfile.TemporaryDirectory() as home,
            tempfile.TemporaryDirectory() as work,
        ):
            cwd = os.path.realpath(work)
            trust = {"projects": {cwd: {"hasTrustDialogAccepted": True}}}
            Path(home, ".claude.json").write_text(json.dumps(trust), encoding="utf-8")
            Path(home, "tmp").mkdir()
            command = [str(self.binary), "-p", PROMPT, "--output-format", "json"]
            command += ["--permission-mode", "default", "--allowedTools", "Bash"]
            done = await asyncio.to_thread(
                subprocess.run,
                command,
                cwd=cwd,
                env=claude_env(server.base_url, home),
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip()[-300:]
                raise RunFailed(f"claude exited {done.returncode}: {tail}")
            conductor.rejected = len(server.errors)
        return conductor


def claude_env(base_url: str, home: str) -> dict[str, str]:
    """Offline settings for Claude Code: the loopback server, no telemetry, a temp home
    (with the temp folder inside it)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-test",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "TMPDIR": str(Path(home, "tmp")),  # it keeps per-folder state there; gone with home
    }
    for name in ("LANG", "LC_ALL"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def install_claude_code(folder: Path) -> tuple[ClaudeCode | None, str]:
    """`npm install` Claude Code into `folder`; (None, why) when that is not possible."""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not on PATH"
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), PACKAGE]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"npm install did not finish: {exc}"
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines()]
        said = [line for line in lines if line and not line.startswith("npm error    ")]
        return None, f"npm install exited {done.returncode}: {' | '.join(said[:4])}"
    return probe(folder / "node_modules" / ".bin" / "claude")


def probe(binary: Path) -> tuple[ClaudeCode | None, str]:
    """A `ClaudeCode` for `binary` if `--version` answers; (None, why) otherwise."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{binary} --version failed: {exc}"
    if done.returncode != 0:
        return None, f"{binary} --version exited {done.returncode}: {done.stderr.strip()[-200:]}"
    version = done.stdout.strip()
    return ClaudeCode(binary, version), version


# --- measuring and reporting ------------------------------------------------------------

Runner = Callable[[Scenario, str], Awaitable[Conductor]]


@dataclass
class Samples:
    """Per (scenario, contender): the figures of the runs that counted, and why others not."""

    figures: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    failures: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    side_requests: dict[tuple[str, str], int] = field(default_factory=dict)
    rejected: dict[tuple[str, str], int] = field(default_factory=dict)

    def of(self, scenario: str, key: str) -> list[float]:
        return self.figures.get((scenario, key), [])


async def attempt(samples: Samples, scenario: Scenario, key: str, run: Runner, tag: str) -> None:
    """One run; its figure, or the reason it gave none, goes into `samples`."""
    slot = (scenario.key, key)
    try:
        conductor = await run(scenario, tag)
        figure = conductor.figure()
    except (RunFailed, subprocess.TimeoutExpired, OSError) as exc:
        samples.failures.setdefault(slot, []).append(f"{type(exc).__name__}: {exc}")
        print(f"  ({scenario.key} [{key}] run {tag} gave no figure: {exc})", flush=True)
        return
    samples.figures.setdefault(slot, []).append(figure)
    samples.side_requests[slot] = samples.side_requests.get(slot, 0) + conductor.side_requests
    samples.rejected[slot] = samples.rejected.get(slot, 0) + conductor.rejected


async def measure(entrants: dict[str, Runner], repeats: int) -> Samples:
    """A warm-up per contender, then every scenario `repeats` times, contenders interleaved."""
    warm = Samples()
    for key, run in entrants.items():
        await attempt(warm, WARM_UP, key, run, "warm")
    samples = Samples()
    for scenario in SCENARIOS:
        for repeat in range(min(repeats, scenario.repeats or repeats)):
            for key, run in entrants.items():
                await attempt(samples, scenario, key, run, f"r{repeat}")
    return samples


def measures(samples: Samples, peer: bool) -> list[Measure]:
    found: list[Measure] = []
    keys = ("ours", "claude_code") if peer else ("ours",)
    for scenario in SCENARIOS:
        limit = scenario.physical_limit
        found.append(Measure(f"{scenario.key}.physical_limit_s", scenario.label, limit, "s"))
        for key in keys:
            runs = samples.of(scenario.key, key)
            if not runs:
                continue
            label = f"{scenario.label} [{key}]"
            note = f"{len(runs)} runs; asking request -> tool_results request, in the server"
            found.append(Measure(f"{scenario.key}.{key}.median_s", label, median(runs), "s", note))
            found.append(Measure(f"{scenario.key}.{key}.min_s", label, min(runs), "s"))
        ours, theirs = samples.of(scenario.key, "ours"), samples.of(scenario.key, "claude_code")
        if ours and theirs:
            ratio = median(ours) / median(theirs)
            note = f"ours / Claude Code, medians; target <= {TARGET_RATIO}"
            found.append(Measure(f"{scenario.key}.ratio_median", scenario.label, ratio, "x", note))
            ratio_min = min(ours) / min(theirs)
            found.append(Measure(f"{scenario.key}.ratio_min", scenario.label, ratio_min, "x"))
    return found


def print_matrix(samples: Samples, peer: bool) -> None:
    """Scenarios down; this project, Claude Code, their ratio and the physical limit across."""

    def cell(runs: Sequence[float]) -> str:
        return f"{median(runs):.3f} s (min {min(runs):.3f})" if runs else "no figure"

    rows = [["scenario", "this project", "Claude Code", "ratio", "physical limit"]]
    for scenario in SCENARIOS:
        ours = samples.of(scenario.key, "ours")
        theirs = samples.of(scenario.key, "claude_code")
        ratio = f"x{median(ours) / median(theirs):.2f}" if ours and theirs else "-"
        peer_cell = cell(theirs) if peer else "not installed"
        rows.append([scenario.label, cell(ours), peer_cell, ratio, _limit(scenario)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(
        "\nasking request -> tool_results request, timed in the loopback server "
        f"(median, min; ratio = ours / Claude Code, target <= {TARGET_RATIO})"
    )
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def _limit(scenario: Scenario) -> str:
    return f"{scenario.physical_limit:.2f} s" if scenario.physical_limit else "-"


def versions(claude: ClaudeCode | None, why: str) -> dict[str, str]:
    found = {"claude-code": claude.version if claude else f"not installed: {why}"}
    for package in ("anthropic", "jupyter-toolhost"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


async def main(repeats: int, claude_path: str | None) -> None:
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="claude-code-") as folder:
        if claude_path:
            claude, why = probe(Path(claude_path))
        else:
            print(f"installing {PACKAGE} with npm into a temp folder ...", flush=True)
            claude, why = install_claude_code(Path(folder))
        if claude is None:
            print(f"Claude Code could not be installed ({why}); this project's figures alone.")
        else:
            print(f"Claude Code {claude.version}")
        entrants: dict[str, Runner] = {"ours": run_ours}
        if claude is not None:
            entrants["claude_code"] = claude.run
        samples = await measure(entrants, repeats)
    peer = claude is not None
    print_matrix(samples, peer)
    path = write_results(NAME, measures(samples, peer))
    payload = json.loads(path.read_text(encoding="utf-8"))
    payload |= {
        "versions": versions(claude, why),
        "repeats": repeats,
        "allow_rule": ALLOW_RULE,
        "scenarios": {
            sc.key: {
                "label": sc.label,
                "physical_limit_s": sc.physical_limit,
                "calls": sc.calls,
                "turns": sc.turns,
                "repeats": min(repeats, sc.repeats or repeats),
            }
            for sc in SCENARIOS
        },
        "samples_s": {
            f"{s}.{k}": [round(v, 4) for v in r] for (s, k), r in samples.figures.items()
        },
        "failures": {f"{s}.{k}": r for (s, k), r in samples.failures.items()},
        "side_requests": {f"{s}.{k}": n for (s, k), n in samples.side_requests.items()},
        "rejected_requests": {f"{s}.{k}": n for (s, k), n in samples.rejected.items()},
        "load_average_1m": {"before": load_before, "after": _load()},
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    load = payload["load_average_1m"]
    print(f"\nload average (1 min): {load['before']} before, {load['after']} after")
    print(f"versions: {payload['versions']}\nwritten to {path}")


def _load() -> float | None:
    """The 1-minute load average (None where the platform has none): a noisy machine shows."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--claude", help="an installed `claude` binary (skips the npm install)")
    args = parser.parse_args()
    asyncio.run(main(args.repeats, args.claude))
