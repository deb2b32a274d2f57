"""The benchmark report's everyday-commands table, from a SYNTHETIC run folder (made-up
decisions, labelled so in the run id; no benchmark runs): counts per column, every command
on which the columns differ, and a column that was not measured named with its reason."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.report import load_run, render

RUN_ID = "synthetic-everyday-20261203T000000Z"


def _run(folder: Path, claude_code: dict[str, str] | str) -> Path:
    folder.mkdir()
    record = {
        "run_id": RUN_ID,
        "started_at": "2026-12-03T00:00:00Z",
        "machine": "machine: SYNTHETIC test data, 1 CPU",
        "full": False,
        "planned": ["bench_everyday_commands"],
        "benchmarks": {"bench_everyday_commands": {"status": 0, "seconds": 1.0}},
        "seconds": 1.0,
    }
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    commands = ["ls -la", "git diff", "pip list", "awk -F, '{print $2}' x.csv"]
    ours = {"ls -la": "allow", "git diff": "ask", "pip list": "ask", commands[3]: "allow"}
    payload = {
        "benchmark": "everyday_commands",
        "run_id": RUN_ID,
        "measures": {"ours_off.asked": {"label": "asked", "value": 2.0, "unit": ""}},
        "versions": {"claude-code": "SYNTHETIC"},
        "rules": {"allow": ["Bash(python3:*)"], "deny": ["Bash(rm:*)"]},
        "mode": "default",
        "columns": {"ours_off": "ours, sandbox off", "cc": "Claude Code"},
        "commands": commands,
        "decisions": {"ours_off": ours, "cc": claude_code},
    }
    (folder / "everyday_commands.json").write_text(json.dumps(payload), encoding="utf-8")
    return folder


def test_the_table_counts_and_shows_every_difference(tmp_path: Path) -> None:
    theirs = {
        "ls -la": "allow",
        "git diff": "allow",
        "pip list": "ask",
        "awk -F, '{print $2}' x.csv": "ask",
    }
    text = render(load_run(_run(tmp_path / "run", theirs)))
    assert "| command | ours, sandbox off | Claude Code |" in text
    assert "| not allowed, of 4 | 2 | 2 |" in text
    assert "| `git diff` | asked | allowed |" in text
    assert "| `awk -F, '{print $2}' x.csv` | allowed | asked |" in text
    assert "`ls -la`" not in text and "| `pip list`" not in text  # the same in both columns
    assert "the other 2 are decided alike (allowed by all, except `pip list`: asked by all)" in text
    assert "`everyday_commands`" not in text  # not repeated in the generic rows


def test_a_column_not_measured_is_named_with_its_reason(tmp_path: Path) -> None:
    text = render(load_run(_run(tmp_path / "run", "not measured: npm is not on PATH")))
    assert "Not measured: Claude Code: not measured: npm is not on PATH." in text
    assert "| not allowed, of 4 | 2 |" in text


def test_the_benchmark_asks_this_project_with_the_projects_own_rules() -> None:
    """The benchmark's own column, really decided (no Claude Code needed): the project's
    allow rules act (its folder is trusted for the run), and once the session has written
    `analysis.py`, running it asks with the reason."""
    from benchmarks.bench_everyday_commands import ours

    before = ours(sandbox=False)
    after = ours(sandbox=False, after_writing=True)
    assert isinstance(before, dict) and isinstance(after, dict)
    assert before["python3 analysis.py"] == "allow" and after["python3 analysis.py"] == "ask"
    assert before["rm data.csv"] == after["rm data.csv"] == "deny"
