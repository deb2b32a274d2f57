"""The quick start replayed offline in a real kernel, by a person who does not do what the
recording did: Deny instead of the allow rule gets the cassette's recorded Deny branch; an
interrupt, then the next cell, ends that cell with one line, not a traceback, and the kernel
and the conversation go on."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import CellRun, Kernel

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ALLOW_EDIT = "%agent allow Edit(notes.md)"

pytestmark = pytest.mark.timeout(120)


def code_cells() -> list[str]:
    import nbformat

    notebook = nbformat.read(NOTEBOOKS / "01-quick-start.ipynb", as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kernel]:
    """A kernel in a copy of notebooks/ with no key and no endpoint: replay only."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copytree(NOTEBOOKS / "sample", folder / "sample")
    shutil.copytree(NOTEBOOKS / "cassettes", folder / "cassettes")
    for name in [n for n in os.environ if n.startswith(("ANTHROPIC_", "JUPYTER_TOOLHOST_"))]:
        monkeypatch.delenv(name)
    started = Kernel(folder, {"HOME": str(tmp_path)})
    try:
        yield started
    finally:
        started.close()


def no_traceback(run: CellRun) -> None:
    error = run.error
    assert error is None or error.get("traceback", []) in (
        [],
        [f"{error['ename']}: {error['evalue']}"],
        [error["evalue"]],  # one line, its message alone (an interrupt's)
    ), error


def test_deny_instead_of_the_allow_rule_gets_the_recorded_deny_branch(kernel: Kernel) -> None:
    cells = [source for source in code_cells() if source != ALLOW_EDIT]
    fix = next(source for source in cells if "Fix the typo" in source)
    for source in cells[: cells.index(fix)]:
        assert kernel.run(source, timeout=60).status == "ok"

    run = kernel.submit(fix)
    [deny] = kernel.wait_for_button(run, "Deny", timeout=30)
    kernel.click(deny)
    kernel.wait(run, timeout=60)
    assert run.status == "ok", run.text()
    no_traceback(run)
    shown = run.text()
    assert "Understood: I left notes.md as it is." in shown
    assert "Denied Edit" in shown and "Replay stopped" not in shown

    after = kernel.run('print(Path("notes.md").read_text())')
    assert "Teh scores" in after.stdout  # nothing was edited


def test_an_interrupt_mid_prompt_then_the_next_cells_replay_their_branch(
    kernel: Kernel,
) -> None:
    cells = [source for source in code_cells() if source != ALLOW_EDIT]
    fix = next(source for source in cells if "Fix the typo" in source)
    for source in cells[: cells.index(fix)]:
        assert kernel.run(source, timeout=60).status == "ok"

    # Stop the cell while its approval prompt waits.
    run = kernel.submit(fix)
    kernel.wait_for_button(run, "Deny", timeout=30)
    kernel.interrupt()
    kernel.wait(run, timeout=30)
    assert run.error is not None and run.error["ename"] == "AgentInterrupted"
    no_traceback(run)

    # The cassette holds the interrupted path too: the cells after it replay as recorded.
    rest = cells[cells.index(fix) + 1 :]
    for source in rest:
        done = kernel.run(source, timeout=60)
        assert done.status == "ok", done.text()
        no_traceback(done)
        assert "Replay stopped" not in done.text()
    assert any("It printed 20,000 lines" in kernel.runs[r].answer for r in kernel.runs)


def test_a_prompt_the_cassette_never_saw_ends_in_one_line_and_the_kernel_goes_on(
    kernel: Kernel,
) -> None:
    cells = code_cells()
    first_agent = next(s for s in cells if s.lstrip().startswith("%%agent"))
    for source in cells[: cells.index(first_agent)]:
        assert kernel.run(source, timeout=60).status == "ok"
    cassette = first_agent.splitlines()[0]  # "%%agent --cassette ../cassettes/01-....json"
    run = kernel.run(f"{cassette}\nWhat is the weather like?", timeout=60)
    assert run.status == "ok", run.text()
    no_traceback(run)
    stopped = [line for line in run.text().splitlines() if line.startswith("Replay stopped:")]
    assert len(stopped) == 1 and "--cassette-mode" in stopped[0], run.text()

    # The kernel and the session are still usable.
    assert kernel.run("print(1 + 1)").stdout.strip() == "2"
    status = kernel.run("%agent status")
    assert status.status == "ok", status.text()
