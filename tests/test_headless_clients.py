"""The shipped notebooks run headless and offline under papermill, nbmake and nbconvert.

Each client runs, as a real subprocess, all four notebooks of a temporary copy of
`notebooks/` (with `sample/` and `cassettes/`; the first cell of each notebook makes its
own sandbox copy of `sample/`), in an environment
without `ANTHROPIC_*` or `JUPYTER_TOOLHOST_*` and with an empty HOME, so every `%%agent`
cell replays its cassette. A run must exit 0, leave no error output, and leave the toolhost
MIME type in every agent cell's outputs (nbmake writes them back with `--overwrite`). Under
CI=true a client that is not installed fails the test.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from headless_helpers import NBCONVERT_EXECUTE, PAPERMILL, require, run_headless

from jupyter_toolhost.pytest_plugin import TOOLHOST_MIME

pytestmark = pytest.mark.timeout(600)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in NAMES:
        shutil.copy2(NOTEBOOKS / name, folder / name)
    for data in ("sample", "cassettes"):
        shutil.copytree(NOTEBOOKS / data, folder / data)
    return folder


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_TOOLHOST_"))
    }
    env.pop("PYTEST_ADDOPTS", None)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str], label: str) -> None:
    run_headless(command, cwd=cwd, env=env, label=label, timeout=540)


def _check(executed: Path) -> None:
    import nbformat

    notebook = nbformat.read(executed, as_version=4)
    agent_cells = 0
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{executed.name} cell {number}: {errors}"
        if cell.source.lstrip().startswith("%%agent"):
            agent_cells += 1
            assert cell.outputs, f"{executed.name} cell {number} has no output"
            assert any(TOOLHOST_MIME in o.get("data", {}) for o in cell.outputs), (
                f"{executed.name} cell {number}: no {TOOLHOST_MIME} output"
            )
    assert agent_cells, f"{executed.name} has no %%agent cell"


def test_the_notebooks_are_found():
    assert len(NAMES) == 4, NAMES


def test_papermill_runs_the_notebooks(tmp_path: Path):
    require("papermill")
    folder = _copy(tmp_path)
    env = _env(tmp_path)
    for name in NAMES:
        out = folder / f"out-{name}"
        _run(
            [*PAPERMILL, name, out.name, "--cwd", str(folder)],
            folder,
            env,
            f"papermill {name}",
        )
        _check(out)


def test_nbconvert_execute_runs_the_notebooks(tmp_path: Path):
    require("nbconvert")
    folder = _copy(tmp_path)
    out = tmp_path / "executed"
    command = [
        *NBCONVERT_EXECUTE,
        "--output-dir",
        str(out),
        *NAMES,
    ]
    _run(command, folder, _env(tmp_path), "nbconvert --execute (4 notebooks)")
    for name in NAMES:
        _check(out / name)


def test_nbmake_runs_the_notebooks(tmp_path: Path):
    require("nbmake")
    folder = _copy(tmp_path)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--nbmake",
        "--overwrite",
        "-p",
        "no:cacheprovider",
        "-q",
        *NAMES,
    ]
    _run(command, folder, _env(tmp_path), "nbmake (4 notebooks)")
    for name in NAMES:
        _check(folder / name)
