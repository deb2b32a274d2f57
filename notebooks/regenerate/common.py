"""Build a notebook: write its cells, record its cassette, run it offline, save the outputs.

A notebook is specified as a `Spec`: its cells and the model turns a scripted model gives
(they play the part of the model while recording). Recording runs the notebook in a real
kernel against the loopback Messages API server (`jupyter_toolhost.testing`) with the real
`anthropic` client, so the cassette is the same format a recording against the real API
makes. The notebook then runs again offline, replaying the cassette, and those outputs
(sanitized as nbval sanitizes them) are saved: they are what `pytest --nbval` compares.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_toolhost.testing import MessagesServer, Turn

NOTEBOOKS = Path(__file__).resolve().parent.parent
CASSETTES = NOTEBOOKS / "cassettes"
SANITIZE_FILE = NOTEBOOKS / "nbval_sanitize.cfg"
SCRUBBED_PREFIXES = ("ANTHROPIC_", "JUPYTER_TOOLHOST_")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


@dataclass
class Spec:
    """One notebook: file stem, cells, and the scripted model's turns in request order."""

    name: str
    cells: list[Any]
    turns: Sequence[Turn] = ()
    timeout: int = 180
    extra_files: dict[str, str] = field(default_factory=dict)

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


# ── sanitizing, as nbval does ──────────────────────────────────────────────────────────────


def sanitize_patterns() -> list[tuple[str, str]]:
    """The (regex, replacement) pairs of nbval_sanitize.cfg, parsed as nbval parses them."""
    text = SANITIZE_FILE.read_text(encoding="utf-8")
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)


def sanitize(value: Any, patterns: Sequence[tuple[str, str]]) -> Any:
    """Apply the patterns to every string inside `value` (JSON payloads included)."""
    if isinstance(value, str):
        for regex, replacement in patterns:
            value = re.sub(regex, replacement, value)
        return value
    if isinstance(value, list):
        return [sanitize(item, patterns) for item in value]
    if isinstance(value, dict):
        return {key: sanitize(item, patterns) for key, item in value.items()}
    return value


# ── running ────────────────────────────────────────────────────────────────────────────────


@contextlib.contextmanager
def kernel_environment(**extra: str) -> Iterator[None]:
    """The environment conftest.py gives nbval's kernels (plus `extra`), restored after."""
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
        with kernel_environment(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="loopback"):
            execute(spec)
        if server.errors:
            raise RuntimeError(f"{spec.name}: the server saw bad requests: {server.errors}")
        if server.remaining_turns:
            raise RuntimeError(f"{spec.name}: {server.remaining_turns} scripted turns unused")
    if spec.turns and not spec.cassette.exists():
        raise RuntimeError(f"{spec.name}: no cassette was recorded at {spec.cassette}")


def replay_and_save(spec: Spec) -> Path:
    """Run the notebook offline from its cassette and save it with sanitized outputs."""
    with kernel_environment():
        notebook = execute(spec)
    patterns = sanitize_patterns()
    for number, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{number:02d}"  # stable ids: a rebuild changes only what changed
        if cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(sanitize(o, patterns)) for o in cell.outputs]
    nbformat.validate(notebook)
    spec.path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    return spec.path


def build(spec: Spec) -> Path:
    """Record, then replay and save."""
    record(spec)
    return replay_and_save(spec)
