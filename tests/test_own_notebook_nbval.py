"""A person's own notebook, recorded once with a key, passes plain `pytest --nbval` offline.

What a user does, step by step, with nothing of this project's test set-up: a notebook
whose `%%agent` cells name a cassette is run once with a key (here against the loopback
Messages API server, through the real `anthropic` client) by `jupyter nbconvert --execute`,
which records the cassette and saves the outputs. Then a fresh folder holds only the
notebook, its cassette and its data, and `pytest --nbval` runs there twice, offline (the
server is gone and no key is set): both runs pass, so record and replay show the same cell
in everything nbval compares (text/plain, text/html, streams).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

if TYPE_CHECKING:
    import nbformat

pytestmark = pytest.mark.timeout(600)

DATA = "klass,score\nA,84\nB,77\nC,71\n"
CASSETTE = "my-notebook.cassette.json"
NBCONVERT = (sys.executable, "-m", "nbconvert")
PYTEST = (sys.executable, "-m", "pytest")


def _notebook() -> nbformat.NotebookNode:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        # What the agent writes is removed first, so every run starts from the same folder.
        nbformat.v4.new_code_cell(
            "import pathlib\nimport pandas as pd\n"
            "pathlib.Path('summary.md').unlink(missing_ok=True)\n"
            "pd.read_csv('scores.csv').shape"
        ),
        nbformat.v4.new_code_cell(
            f"%%agent --cassette {CASSETTE}\nHow many rows does scores.csv have, "
            "and which class scored best?"
        ),
        nbformat.v4.new_code_cell("%agent allow Write(summary.md)"),
        nbformat.v4.new_code_cell("%%agent\nWrite that into summary.md."),
        nbformat.v4.new_code_cell("%agent history"),
    ]
    return notebook


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_TOOL"))}
    return {**env, **extra}


def test_recorded_once_then_plain_nbval_passes_twice_offline(tmp_path: Path) -> None:
    import nbformat

    work, fresh = tmp_path / "work", tmp_path / "fresh"
    work.mkdir()
    (work / "scores.csv").write_text(DATA)
    nbformat.write(_notebook(), work / "my.ipynb")

    with MessagesServer() as server:
        server.add_turns(
            Turn([tool_use("Read", {"file_path": "scores.csv"})]),
            Turn([text("scores.csv has **3 rows**; class `A` scored best (84).")]),
            Turn([tool_use("Write", {"file_path": "summary.md", "content": "3 rows; A best\n"})]),
            Turn([text("Written to summary.md.")]),
        )
        recorded = subprocess.run(
            [*NBCONVERT, "--to", "notebook", "--execute", "--inplace", "my.ipynb"],
            cwd=work,
            env=_clean_env(
                ANTHROPIC_API_KEY="test-key",
                ANTHROPIC_BASE_URL=server.base_url,
                JUPYTER_TOOLHOST_CASSETTE_SOURCE="scripted",  # the server's answers are scripted
                HOME=str(tmp_path / "home"),
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert recorded.returncode == 0, recorded.stderr[-3000:]
        assert server.errors == [], server.errors
    assert json.loads((work / CASSETTE).read_text())  # the cassette was recorded

    saved = nbformat.read(work / "my.ipynb", as_version=4)
    outputs = [output for cell in saved.cells for output in cell.get("outputs", [])]
    shown = "".join(o.get("text", "") for o in outputs) + json.dumps(outputs)
    assert "3 rows**" in shown and "Written to summary.md." in shown
    assert "VBox(" not in shown and "widget-view" not in shown

    fresh.mkdir()
    for name in ("my.ipynb", CASSETTE, "scores.csv"):
        shutil.copy(work / name, fresh / name)
    for round in (1, 2):
        run = subprocess.run(
            [*PYTEST, "--nbval", "my.ipynb", "-p", "no:cacheprovider", "-q", "--color=no"],
            cwd=fresh,
            env=_clean_env(HOME=str(tmp_path / "home")),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, f"round {round}:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
        assert "6 passed" in run.stdout, run.stdout[-2000:]
