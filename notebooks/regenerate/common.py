"""Build a notebook: write its cells, record its cassette, run it offline, save the outputs.

A notebook is specified as a `Spec`: its cells and the model turns a scripted model gives
(they play the part of the model while recording). Recording runs the notebook in a real
kernel against the loopback Messages API server (`jupyter_toolhost.testing`) with the real
`anthropic` client, so the cassette is the same format a recording against the real API
makes (marked scripted). A `Branch` adds another path to the same cassette, recorded in a
real kernel with its approval buttons clicked. The notebook then runs again offline,
replaying the cassette, and its outputs are saved as they are: they are what
`pytest --nbval` compares.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_toolhost.testing import MessagesServer, Turn

# The branch recorder drives a real kernel with the tests' jupyter_client driver.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

NOTEBOOKS = Path(__file__).resolve().parent.parent
CASSETTES = NOTEBOOKS / "cassettes"
SCRUBBED_PREFIXES = ("ANTHROPIC_", "JUPYTER_TOOLHOST_")
SCRIPTED = {"JUPYTER_TOOLHOST_CASSETTE_SOURCE": "scripted"}
"""Cassettes recorded here hold scripted answers, not a model's: they say so."""
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


INTERRUPT = "<interrupt>"
"""In `Branch.clicks`: interrupt the kernel while the approval prompt waits."""


@dataclass(frozen=True)
class Branch:
    """Another path through a notebook, recorded into the same cassette: the notebook run
    with the cells whose source is in `skip` left out, the approval buttons in `clicks`
    clicked in turn (in a real kernel, as a browser would; `INTERRUPT` stops the cell while
    its prompt waits), and `turns` answering the requests the cassette does not hold yet."""

    name: str
    turns: Sequence[Turn]
    skip: tuple[str, ...] = ()
    clicks: tuple[str, ...] = ()


@dataclass
class Spec:
    """One notebook: file stem, cells, and the scripted model's turns in request order."""

    name: str
    cells: list[Any]
    turns: Sequence[Turn] = ()
    timeout: int = 180
    extra_files: dict[str, str] = field(default_factory=dict)
    branches: Sequence[Branch] = ()

    @property
    def path(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"

    @property
    def cassette(self) -> Path:
        return CASSETTES / f"{self.name}.json"


def md(text: str) -> Any:
    """A markdown cell (the text is dedented and stripped)."""
    return nbformat.v4.new_markdown_cell(_clean(text))


def code(text: str) -> Any:
    """A code cell."""
    return nbformat.v4.new_code_cell(_clean(text))


def _clean(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")


def sandbox_cell(number: str) -> Any:
    """The first code cell of every notebook: a fresh working copy of sample/."""
    return code(
        f"""
        # Work in a fresh copy of sample/, so this notebook can run again and again.
        import os
        import shutil
        from pathlib import Path

        HERE = Path.cwd() if Path("sample").is_dir() else Path.cwd().parent
        SANDBOX = HERE / "sandbox-{number}"
        shutil.rmtree(SANDBOX, ignore_errors=True)
        shutil.copytree(HERE / "sample", SANDBOX)
        os.chdir(SANDBOX)
        """
    )


# ── running ────────────────────────────────────────────────────────────────────────────────


@contextlib.contextmanager
def kernel_environment(**extra: str) -> Iterator[None]:
    """An offline, unconfigured environment for the kernels (plus `extra`), restored after."""
    saved = dict(os.environ)
    home = tempfile.mkdtemp(prefix="toolhost-build-home-")
    try:
        for name in [n for n in os.environ if n.startswith(SCRUBBED_PREFIXES)]:
            del os.environ[name]
        os.environ["JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"] = "5"
        os.environ["HOME"] = home
        os.environ.update(extra)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(home, ignore_errors=True)


def execute(spec: Spec) -> Any:
    """Run the notebook's cells in a fresh kernel started in notebooks/; returns it."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = KERNELSPEC
    notebook.metadata["language_info"] = {"name": "python"}
    notebook.cells = [nbformat.from_dict(cell) for cell in spec.cells]
    client = NotebookClient(
        notebook,
        timeout=spec.timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    return notebook


def record(spec: Spec) -> None:
    """Record the cassette: run the notebook against the scripted loopback server."""
    for old in CASSETTES.glob(f"{spec.name}*.json"):
        old.unlink()
    with MessagesServer(list(spec.turns)) as server:
        with kernel_environment(
            ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="loopback", **SCRIPTED
        ):
            execute(spec)
        if server.errors:
            raise RuntimeError(f"{spec.name}: the server saw bad requests: {server.errors}")
        if server.remaining_turns:
            raise RuntimeError(f"{spec.name}: {server.remaining_turns} scripted turns unused")
    if spec.turns and not spec.cassette.exists():
        raise RuntimeError(f"{spec.name}: no cassette was recorded at {spec.cassette}")


def replay_and_save(spec: Spec) -> Path:
    """Run the notebook offline from its cassette and save it as it ran: what it shows does
    not depend on the machine or the folder (the pytest plugin masks the durations)."""
    with kernel_environment():
        notebook = execute(spec)
    for number, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{number:02d}"  # stable ids: a rebuild changes only what changed
    nbformat.validate(notebook)
    # Outputs name the folder the notebooks ran in: keep them relative to notebooks/, so a
    # rebuild writes nothing of the machine it ran on (those outputs are not compared).
    text = (nbformat.writes(notebook) + "\n").replace(f"{NOTEBOOKS}/", "")
    spec.path.write_text(text, encoding="utf-8")
    return spec.path


def record_branch(spec: Spec, branch: Branch) -> None:
    """Add `branch` to the cassette: replay what it holds, record what is missing (cassette
    mode auto), clicking the approval buttons the branch names."""
    from kernel_helpers import Kernel  # tests/: the jupyter_client driver the tests click with

    with MessagesServer(list(branch.turns)) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "loopback", **SCRIPTED}
        with kernel_environment(**env):
            kernel = Kernel(NOTEBOOKS, dict(os.environ))
            try:
                clicks = list(branch.clicks)
                for cell in spec.cells:
                    if cell["cell_type"] != "code" or cell["source"] in branch.skip:
                        continue
                    run = kernel.submit(cell["source"])
                    interrupted = False
                    while clicks:
                        wanted = "Deny" if clicks[0] == INTERRUPT else clicks[0]
                        kernel.wait(
                            run,
                            timeout=spec.timeout,
                            until=lambda run=run, wanted=wanted: bool(kernel.buttons(wanted, run))
                            or run.finished_at is not None,
                        )
                        shown = kernel.buttons(wanted, run)
                        if not shown:
                            break  # this cell asked nothing: a later one will
                        if clicks.pop(0) == INTERRUPT:
                            kernel.interrupt()  # the stop button, while the prompt waits
                            interrupted = True
                            break
                        kernel.click(shown[0])
                    kernel.wait(run, timeout=spec.timeout)
                    stopped = interrupted and (run.error or {}).get("ename") == "AgentInterrupted"
                    if run.status != "ok" and not stopped:
                        failed = f"{spec.name} ({branch.name}), cell {cell['source']!r}"
                        raise RuntimeError(f"{failed}: {run.text()[-2000:]}")
            finally:
                kernel.close()
        if clicks:
            raise RuntimeError(f"{spec.name} ({branch.name}): no button for {clicks}")
        if server.errors or server.remaining_turns:
            raise RuntimeError(
                f"{spec.name} ({branch.name}): bad requests {server.errors}, "
                f"{server.remaining_turns} scripted turns unused"
            )


def build(spec: Spec) -> Path:
    """Record (every branch too), then replay and save."""
    record(spec)
    for branch in spec.branches:
        record_branch(spec, branch)
    return replay_and_save(spec)
