"""Permission decisions per second with 1,000 rules (target: ≥ 50,000 per second).

The rules are compiled once; each decision runs the pure `decide()` over a mix of calls —
reads inside and outside the project, edits, allowed, compound and denied shell commands,
web fetches, MCP and custom tools. Measured three ways: with the lexical resolver (no file
system at all), with the real `os.path.realpath` resolver, and with shell parsing uncached
(every command new). Run: ``.venv/bin/python -m benchmarks.bench_permissions``.

Beside the lexical rate stands a machine-speed reference measured in the same run: a fixed
pure-Python op (`reference_op`), timed in rounds that alternate with the decision rounds so
both see the same load. "Decisions per reference op" is the rate divided by it, round by
round; on a noisy shared machine both drop together, so that ratio is the figure to compare
across machines and runs.
"""

from __future__ import annotations

import tempfile
import time
import timeit
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.permissions import OsResolver, PathResolver, PureResolver, decide
from jupyter_toolhost.permissions.rules.ruleset import CompiledRules, compile_rules
from jupyter_toolhost.shell.commands import analyze

from .common import Measure, median, print_table, write_results

RULES = 1_000
ROUNDS = 5


class _File(BaseModel):
    file_path: str


class _Shell(BaseModel):
    command: str


class _Url(BaseModel):
    url: str


class _Any(BaseModel):
    value: str = ""


def _tools() -> dict[str, Tool[Any]]:
    def noop(_i: Any, _c: Any) -> str:
        return ""

    return {
        "read": build_tool(
            name="Read",
            input_model=_File,
            call=noop,
            description="r",
            read_only=True,
            get_path=lambda i: i.file_path,
        ),
        "edit": build_tool(
            name="Edit",
            input_model=_File,
            call=noop,
            description="e",
            get_path=lambda i: i.file_path,
        ),
        "bash": build_tool(
            name="Bash",
            input_model=_Shell,
            call=noop,
            description="b",
            shell_command=lambda i: i.command,
        ),
        "web": build_tool(
            name="WebFetch",
            input_model=_Url,
            call=noop,
            description="w",
            read_only=True,
            get_url=lambda i: i.url,
        ),
        "mcp": build_tool(name="mcp__srv7__tool3", input_model=_Any, call=noop, description="m"),
        "custom": build_tool(name="custom_42", input_model=_Any, call=noop, description="c"),
    }


def _rules() -> dict[str, dict[str, tuple[str, ...]]]:
    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []
    for i in range(300):
        allow.append(f"Bash(tool{i} run:*)")
    for i in range(100):
        deny.append(f"Bash(danger{i}:*)")
    for i in range(50):
        ask.append(f"Bash(deploy{i} *)")
    for i in range(150):
        allow.append(f"Read(//data/set{i}/**)")
        deny.append(f"Read(./secret{i}/**)")
    for i in range(50):
        allow.append(f"Edit(./src/pkg{i}/**)")
    for i in range(50):
        allow.append(f"WebFetch(domain:site{i}.example.org)")
        deny.append(f"WebFetch(domain:bad{i}.example.net)")
    for i in range(50):
        allow.append(f"mcp__srv{i}__tool{i}")
    for i in range(50):
        deny.append(f"custom_{i + 100}")
    rules = {"allow": tuple(allow), "deny": tuple(deny), "ask": tuple(ask)}
    assert sum(len(v) for v in rules.values()) == RULES
    return {"projectSettings": rules}


CALLS: list[tuple[str, dict[str, str]]] = [
    ("read", {"file_path": "src/app.py"}),
    ("read", {"file_path": "/data/set120/part-0001.parquet"}),
    ("read", {"file_path": "secret77/key.pem"}),
    ("edit", {"file_path": "src/pkg33/module.py"}),
    ("bash", {"command": "tool250 run --fast"}),
    ("bash", {"command": "ls -la src && tool12 run | wc -l"}),
    ("bash", {"command": "FOO=1 timeout 30 danger42 --force"}),
    ("bash", {"command": "git status"}),
    ("web", {"url": "https://site44.example.org/docs"}),
    ("mcp", {"value": "x"}),
    ("custom", {"value": "x"}),
]


def _rate(run: Callable[[], None], seconds: float = 0.6, per_run: int = len(CALLS)) -> float:
    count, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        run()
        count += 1
    return count * per_run / elapsed


_REFERENCE_WORDS = tuple(f"word{i}" for i in range(32))


def reference_op() -> int:
    """One op of the machine-speed reference: a fixed pure-Python workload (a dict built,
    a string joined, split, upper-cased and looked up), the kind of work a decision does."""
    table = {word: i for i, word in enumerate(_REFERENCE_WORDS)}
    total = 0
    for part in " ".join(_REFERENCE_WORDS).split():
        total += table[part] + len(part.upper())
    return total


def _reference(repeat: int = 50) -> None:
    for _ in range(repeat):
        reference_op()


def _paired_rounds(run: Callable[[], None]) -> tuple[float, float, float]:
    """Decision rates and reference rates measured in alternation, so that both see the
    same machine: (median decisions/s, median reference ops/s, median of their ratios)."""
    decisions: list[float] = []
    references: list[float] = []
    for _ in range(ROUNDS):
        references.append(_rate(_reference, 0.3, per_run=50))
        decisions.append(_rate(run))
    ratios = [d / r for d, r in zip(decisions, references, strict=True)]
    return median(decisions), median(references), median(ratios)


def _runner(compiled: CompiledRules, cwd: str, resolver: PathResolver, *, cached: bool):
    tools = _tools()
    parsed = [(tools[k], tools[k].input_model.model_validate(v)) for k, v in CALLS]

    def run() -> None:
        if not cached:
            analyze.cache_clear()
        for tool, data in parsed:
            decide(
                tool=tool, input=data, rules=compiled, mode="default", cwd=cwd, resolver=resolver
            )

    return run


def main() -> None:
    with tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        compiled = compile_rules(_rules(), cwd=cwd, home="/home/user")
        compile_ms = (time.perf_counter() - started) * 1000
        behaviors = []
        tools = _tools()
        for key, raw in CALLS:
            tool = tools[key]
            result = decide(
                tool=tool,
                input=tool.input_model.model_validate(raw),
                rules=compiled,
                mode="default",
                cwd=cwd,
                resolver=PureResolver(),
            )
            behaviors.append(result.behavior)
        pure, reference, relative = _paired_rounds(
            _runner(compiled, cwd, PureResolver(), cached=True)
        )
        real = median(
            [_rate(_runner(compiled, cwd, OsResolver(), cached=True)) for _ in range(ROUNDS)]
        )
        uncached = median(
            [_rate(_runner(compiled, cwd, PureResolver(), cached=False)) for _ in range(ROUNDS)]
        )
    calibration = min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000 * 1e6
    mix = ", ".join(f"{b}×{behaviors.count(b)}" for b in ("allow", "ask", "deny"))
    measures = [
        Measure("compile_ms", f"compile {RULES:,} rules", compile_ms, "ms", "once per change"),
        Measure(
            "decisions_pure",
            "decisions/s, lexical resolver",
            pure,
            "1/s",
            f"target ≥ 50,000; mix {mix}",
        ),
        Measure(
            "reference_ops",
            "  machine speed: reference op/s",
            reference,
            "1/s",
            "fixed pure-Python op, measured between the decision rounds",
        ),
        Measure(
            "decisions_pure_relative",
            "  decisions per reference op",
            relative,
            "x",
            "median of the rounds' ratios; compare this across machines",
        ),
        Measure("decisions_os", "decisions/s, os.path.realpath resolver", real, "1/s"),
        Measure(
            "decisions_uncached_shell",
            "decisions/s, shell parse uncached",
            uncached,
            "1/s",
            "every command parsed afresh",
        ),
        Measure(
            "calibration_us",
            "machine speed: sum(range(1000))",
            calibration,
            "µs",
            "≈ 6–8 µs on an idle recent x86 core; scale the rates by it",
        ),
    ]
    print_table(f"Permission decisions with {RULES:,} rules ({len(CALLS)} kinds of call)", measures)
    print(f"\nwrote {write_results('bench_permissions', measures)}")


if __name__ == "__main__":
    main()
