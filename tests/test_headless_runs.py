"""Headless runs never hang on an approval prompt: papermill and `jupyter nbconvert --execute`.

Each runs, as a real subprocess, a notebook whose `%%agent` cell (default mode, no timeout)
makes the model ask for PythonExec; the loopback Messages API server scripts the model.
Nobody can click there, so the ask is denied at once with a message that names the fix,
the run finishes quickly, and the next cell runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from headless_helpers import NBCONVERT_EXECUTE, PAPERMILL, require, run_headless
from kernel_helpers import is_answer

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(180)

HEADLESS = "No front end that shows widgets is connected to this kernel"


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as running:
        yield running


def _notebook(path: Path) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%%agent\nDelete scratch.txt"),
        nbformat.v4.new_code_cell("print('after the agent')"),
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, path)


def _env(server: MessagesServer, root: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "JUPYTER_TOOLHOST_HOME": str(root / ".toolhost"),
        "HOME": str(root),
    }
    env.pop("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT", None)
    return env


def _check(executed: Path, server: MessagesServer, root: Path, took: float) -> None:
    import nbformat

    notebook = nbformat.read(executed, as_version=4)
    agent = notebook.cells[1].outputs
    streams = "".join(o.get("text", "") for o in agent if o.output_type == "stream")
    assert "Denied PythonExec" in streams, streams
    for fix in (HEADLESS, "dontAsk", "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"):
        assert fix in streams
    answers = [o["data"]["text/plain"] for o in agent if is_answer(o)]
    assert "I left the file alone." in answers  # the model's words
    assert (root / "scratch.txt").exists(), "the denied call must not have run"
    after = "".join(o.get("text", "") for o in notebook.cells[2].outputs)
    assert after == "after the agent\n"
    [result] = [
        b
        for b in server.requests[-1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    assert result.get("is_error") is True and HEADLESS in str(result["content"])
    assert server.errors == [], server.errors
    assert took < 60, f"the run took {took:.1f} s"


def _script(server: MessagesServer) -> None:
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "import os; os.remove('scratch.txt')"})]),
        Turn([text("I left the file alone.")]),
    )


def _run_asking_notebook(
    command: list[str], label: str, server: MessagesServer, root: Path
) -> None:
    (root / "scratch.txt").write_text("keep me\n")
    _notebook(root / "in.ipynb")
    _script(server)
    env = _env(server, root)
    took = run_headless(command, cwd=root, env=env, label=label, timeout=150)
    _check(root / "out.ipynb", server, root, took)


def test_papermill_finishes_with_the_deny_message(server: MessagesServer, tmp_path: Path):
    require("papermill")
    command = [*PAPERMILL, "in.ipynb", "out.ipynb", "--cwd", str(tmp_path)]
    _run_asking_notebook(command, "papermill, the asking notebook", server, tmp_path)


def test_nbconvert_execute_finishes_with_the_deny_message(server: MessagesServer, tmp_path: Path):
    command = [*NBCONVERT_EXECUTE, "in.ipynb", "--output", "out.ipynb"]
    _run_asking_notebook(command, "nbconvert --execute, the asking notebook", server, tmp_path)


def test_plain_ipython_denies_without_showing_a_prompt(server: MessagesServer, tmp_path: Path):
    """No kernel at all: the ask is answered at once, no widget is even built."""
    (tmp_path / "scratch.txt").write_text("keep me\n")
    script = tmp_path / "run.ipy"
    script.write_text(
        "%load_ext jupyter_toolhost\n"
        "get_ipython().run_cell('%%agent\\nDelete scratch.txt')\n"
        "import sys; print('ipywidgets imported:', 'ipywidgets' in sys.modules)\n"
    )
    _script(server)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=nocolor", str(script)],
        cwd=tmp_path,
        env=_env(server, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "Denied PythonExec" in out and "(no front end to ask)" in out, out + done.stderr
    assert HEADLESS in out and "I left the file alone." in out
    assert "ipywidgets imported: False" in out
    assert (tmp_path / "scratch.txt").exists()
    assert server.errors == [], server.errors
    assert took < 60
