"""The benchmark results page, generated from one run: ``python -m benchmarks report``.

Reads the JSON files of one run of ``python -m benchmarks`` (default: the committed full run
in `benchmarks/results/`; ``--results DIR`` for another) and prints the Markdown that goes
between the report markers of the docs' benchmarks page (`docs/benchmarks.md`): the run's
date and machine line, the peers table (every scenario, every contender as a column, Claude
Code's too), the other figures with their references, and every target the run missed. It
refuses a folder that mixes runs: every JSON must carry the run id of the folder's
`run.json`.

``--write-readme`` puts that Markdown between the markers of that page; ``--check-readme``
exits 1 when the page's block differs from it (`tests/benchmarks/test_benchmark_report.py`
checks the same). The flags keep their names from when the results lived in the README; ``--page``
(alias ``--readme``) names another file. Every target, with the reason for it, is in
`targets.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import RUN_DIR
from .report_cost import cost_section
from .report_everyday import everyday_section
from .report_parts import Run, table
from .report_rows import other_rows

if TYPE_CHECKING:
    from .targets import Verdict

PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
RUN_FILE = "run.json"
BEGIN = "<!-- benchmarks report: begin (python -m benchmarks report --write-readme) -->"
END = "<!-- benchmarks report: end -->"
PEER_ORDER = ("ours", "sdk_runner", "sdk_eager", "pydantic_ai", "pai_function", "bare")
PEER_HEADS = {
    "ours": "this project",
    "sdk_runner": "anthropic tool runner",
    "sdk_eager": "tool runner, eager",
    "pydantic_ai": "pydantic-ai",
    "pai_function": "pydantic-ai FunctionModel (no HTTP)",
    "bare": "raw-client loop (floor)",
}


class ReportError(Exception):
    """The folder does not hold one whole run (the message says what is wrong)."""


def load_run(folder: Path) -> Run:
    """The run in `folder`; `ReportError` unless every JSON there belongs to it."""
    record_path = folder / RUN_FILE
    if not record_path.is_file():
        raise ReportError(
            f"{folder} has no {RUN_FILE}: it is not the folder of a `python -m benchmarks` "
            "run (a benchmark run on its own writes to benchmarks/results/scratch/)"
        )
    record = _read(record_path)
    run_id = record.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise ReportError(f"{record_path} names no run_id")
    run = Run(folder, record)
    strangers = []
    for path in sorted(folder.glob("*.json")):
        if path.name == RUN_FILE:
            continue
        payload = _read(path)
        if payload.get("run_id") != run_id:
            strangers.append(f"{path.name} (run {payload.get('run_id') or 'none recorded'})")
            continue
        run.results[str(payload.get("benchmark") or path.stem)] = payload
    if strangers:
        raise ReportError(
            f"{folder} mixes runs: {RUN_FILE} is run {run_id}, but "
            f"{', '.join(strangers)} are not; run `./dev bench` for a whole run"
        )
    return run


def _read(path: Path) -> dict[str, Any]:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path} cannot be read as JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise ReportError(f"{path} holds no JSON object")
    return payload


# --- Markdown ---------------------------------------------------------------------------


def header(run: Run) -> list[str]:
    record = run.record
    started = str(record.get("started_at", "?"))
    minutes = float(record.get("seconds") or 0) / 60
    kind = "a full run" if record.get("full") else "a partial run"
    lines = [
        f"Run `{record['run_id']}` of `python -m benchmarks` ({kind}), started {started}, "
        f"{minutes:.0f} min in all; {record.get('machine', 'machine: not recorded')}.",
    ]
    versions: dict[str, str] = {}
    for benchmark in ("bench_peers", "claude_code"):
        versions |= run.payload(benchmark).get("versions", {})
    if versions:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
        lines.append(f"Versions: {shown}.")
    statuses = record.get("benchmarks", {})
    failed = [m for m, s in statuses.items() if s.get("status") != 0]
    not_run = [m for m in record.get("planned", []) if m not in statuses]
    if failed:
        lines.append(f"Did not run to the end: {', '.join(failed)}.")
    if not_run:
        lines.append(f"Never started (the run stopped): {', '.join(not_run)}.")
    return [" ".join(lines)]


def peers_section(run: Run) -> list[str]:
    peers = run.payload("bench_peers")
    if not peers:
        return ["The peers benchmark (`bench_peers`) is not in this run.", *_cc_alone(run)]
    measures = peers.get("measures", {})
    contenders: dict[str, str] = peers.get("contenders", {})
    keys = [k for k in PEER_ORDER if k in contenders]
    keys += [k for k in contenders if k not in keys]  # a new contender is a column too
    cc = run.payload("claude_code")
    cc_scenarios = cc.get("scenarios", {})
    has_cc = any(f"{s}.claude_code.median_s" in cc.get("measures", {}) for s in cc_scenarios)
    head = ["scenario", "limit", *(PEER_HEADS.get(k, contenders[k]) for k in keys)]
    head += ["Claude Code ¹"] if has_cc else []
    rows: list[list[str]] = []
    scenarios = {
        k: v for k, v in peers.get("scenarios", {}).items() if not k.startswith("head_start")
    }
    for scenario, info in scenarios.items():
        limit = info["physical_limit_s"]
        cells = [f"{info['label']} (best of {info['repeats']})", _s(limit) if limit else "—"]
        for key in keys:
            wall = measures.get(f"{scenario}.{key}.wall_s", {}).get("value")
            ratio = measures.get(f"{scenario}.{key}.ratio", {}).get("value")
            if wall is None:
                cells.append("no figure")
            else:
                cells.append(
                    _s(wall) + ("" if key == "ours" or ratio is None else f" ×{ratio:.2f}")
                )
        if has_cc:
            cells.append(_cc_cell(run, scenario))
        rows.append(cells)
        if info["turns"] > 1:
            per = ["↳ overhead per call", ""]
            for key in keys:
                value = measures.get(f"{scenario}.{key}.overhead_ms", {}).get("value")
                per.append("" if value is None else f"{value:.1f} ms")
            rows.append(per + ([_cc_per_call(run, scenario)] if has_cc else []))
    lines = [
        "The loop against its peers (`bench_peers`): the same scripted conversation from the "
        "same loopback Messages API server through the real `anthropic` client, runs "
        "interleaved. Each figure is the fastest wall time from the prompt to the final answer "
        "(×: that contender's time over this project's); an N-turn row's second line is the "
        "wall time over the physical limit per call.",
        "",
        *table(head, rows),
    ]
    if has_cc:
        lines += [
            "",
            "¹ Measured differently (`bench_claude_code`): Claude Code "
            f"{cc.get('versions', {}).get('claude-code', '?')} runs real Bash calls (`sleep`; "
            "`sleep 0` once per turn in the N-turn rows), timed in the server from the request "
            "that asks for the calls to the request that returns the last results, median of "
            "its runs; in brackets this project's `Session` with its built-in Bash, measured "
            "the same way in the same benchmark, and its ratio (ours / Claude Code). The N-turn "
            "rows run only to 100 turns there: each turn is a real Bash process on both sides.",
        ]
    return lines


def _cc_alone(run: Run) -> list[str]:
    """Claude Code's figures when the peers table is missing (a partial run)."""
    cc = run.payload("claude_code")
    if not cc:
        return []
    rows = [
        [info.get("label", key), _cc_cell(run, key)]
        for key, info in cc.get("scenarios", {}).items()
    ]
    return ["", *table(["`bench_claude_code` scenario", "Claude Code [this project]"], rows)]


def _cc_cell(run: Run, scenario: str) -> str:
    theirs = run.value("claude_code", f"{scenario}.claude_code.median_s")
    ours = run.value("claude_code", f"{scenario}.ours.median_s")
    if theirs is None:
        return "—" if ours is None else "no figure"
    bracket = "" if ours is None else f" [ours {_s(ours)}, ×{ours / theirs:.2f}]"
    return f"{_s(theirs)}{bracket}"


def _cc_per_call(run: Run, scenario: str) -> str:
    info = run.payload("claude_code").get("scenarios", {}).get(scenario)
    theirs = run.value("claude_code", f"{scenario}.claude_code.median_s")
    ours = run.value("claude_code", f"{scenario}.ours.median_s")
    if info is None or theirs is None or ours is None:
        return ""
    calls = info["calls"]
    return f"{theirs / calls * 1e3:.1f} ms [ours {ours / calls * 1e3:.1f} ms]"


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def render(run: Run) -> str:
    """The Markdown of the run's report: header, peers table, other figures, missed targets."""
    from .targets import evaluate

    lines = [*header(run), "", *peers_section(run), ""]
    rows = other_rows(run)  # the second table, from report_rows
    if rows:
        lines += table(["measure", "this project", "reference / peer, same run", "target"], rows)
        lines.append("")
    lines += everyday_section(run)
    lines += cost_section(run)
    verdicts = evaluate(run)
    missed = [v for v in verdicts if v.met is False]
    unmeasured = [v for v in verdicts if v.met is None]
    met = len(verdicts) - len(missed) - len(unmeasured)
    lines.append(f"**Missed targets** ({len(missed)} of {len(verdicts)}; {met} met):")
    lines.append("")
    lines += _by_reason(missed) or ["- none"]
    if unmeasured:
        lines += ["", "**Targets this run did not measure:**", ""]
        lines += _by_reason(unmeasured)
    return "\n".join(lines) + "\n"


def _by_reason(verdicts: list[Verdict]) -> list[str]:
    """Each target with its figure, under the reason for it (each reason said once)."""
    groups: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        groups.setdefault(verdict.why, []).append(verdict)
    lines: list[str] = []
    for why, group in groups.items():
        lines.append(f"- Why: {why}.")
        lines += [f"  - {v.target}: {v.figure}" for v in group]
    return lines


def readme_block(readme: str) -> str:
    """The text between the report markers of `readme` (ReportError without them)."""
    begin, end = readme.find(BEGIN), readme.find(END)
    if begin < 0 or end < begin:
        raise ReportError(f"the page has no report markers ({BEGIN} ... {END})")
    return readme[begin + len(BEGIN) : end].strip("\n") + "\n"


def with_block(readme: str, report: str) -> str:
    """`readme` with `report` between its markers."""
    readme_block(readme)  # the markers must be there
    begin, end = readme.find(BEGIN) + len(BEGIN), readme.find(END)
    return f"{readme[:begin]}\n{report}{readme[end:]}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks report", description=__doc__)
    parser.add_argument("--results", type=Path, default=RUN_DIR, help="the run's folder")
    parser.add_argument("--page", "--readme", dest="readme", type=Path, default=PAGE)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write-readme", action="store_true")
    action.add_argument("--check-readme", action="store_true")
    args = parser.parse_args(argv)
    try:
        report = render(load_run(args.results))
        if args.write_readme or args.check_readme:
            readme = args.readme.read_text(encoding="utf-8")
            if args.check_readme:
                if readme_block(readme) != report:
                    print(f"{args.readme}'s results differ from {args.results}'s report")
                    return 1
                print(f"{args.readme}'s results are {args.results}'s report")
                return 0
            args.readme.write_text(with_block(readme, report), encoding="utf-8")
            print(f"wrote the report of {args.results} into {args.readme}")
            return 0
    except ReportError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
