"""The `%%agent` line and the command line read their shared options through one table:
the same strings give the same values, and the same mistakes the same message."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from jupyter_toolhost.__main__ import parser
from jupyter_toolhost.jupyter.magic.options import UsageError, parse_cell_line

SAME = [
    "--model claude-x --mode dontAsk",
    "--mode=plan --max-turns 7",
    "--cassette c.json --cassette-mode replay",
    "--disclosure discovered --think 2048",
    "--think off --disclosure=server_bm25",
    "--permission-mode acceptEdits",
]
MISTAKES = [
    "--mode replay",
    "--cassette-mode dontAsk",
    "--disclosure everything",
    "--think 500",
    "--think lots",
    "--max-turns 0",
    "--max-turns many",
]


def _cli_values(line: str) -> dict[str, object]:
    args = vars(parser().parse_args([*shlex.split(line), "a prompt"]))
    return {
        "model": args["model"],
        "mode": args["permission_mode"],
        "max_turns": args["max_turns"],
        "cassette": args["cassette"],
        "cassette_mode": args["cassette_mode"],
        "disclosure": args["disclosure"],
        "think": args["think"],
    }


@pytest.mark.parametrize("line", SAME)
def test_the_cell_and_the_command_line_read_an_option_alike(line: str) -> None:
    cell_line = line.replace("--permission-mode", "--mode")  # the command line's other name
    cli = _cli_values(line)
    given = {k: v for k, v in cli.items() if f"--{k.replace('_', '-')}" in cell_line}
    cell = parse_cell_line(cell_line)
    assert given == {k: getattr(cell, k) for k in given}
    assert given  # the line gave at least one option


@pytest.mark.parametrize("line", MISTAKES)
def test_the_cell_and_the_command_line_refuse_a_mistake_in_the_same_words(line: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_cell_line(line)
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_toolhost", *shlex.split(line), "a prompt"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert str(raised.value) in " ".join(done.stderr.split("\n"))
