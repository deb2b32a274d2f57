"""Each shipped notebook, exported to HTML as nbviewer and `nbconvert --to html` show it,
holds no widget: no widget view, no `VBox(children=…` repr, nothing that would say "Error
displaying widget". The saved outputs are what `notebooks/regenerate` stored after a run in
a real kernel, where approval prompts were shown and decided (see `jupyter.approval`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
VIEW_TAG = f'<script type="{WIDGET_VIEW}">'
"""How an export embeds a widget view (the export's loader script names the type too)."""
WIDGET_REPR = re.compile(
    r"\b(?:VBox|HBox|Button|Text|HTML|Output|Checkbox)\((?:children|value|description|layout)="
)


def test_there_are_notebooks_to_export() -> None:
    assert len(NOTEBOOKS) >= 4, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_html_export_holds_no_widget(path: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert WIDGET_VIEW not in data, (cell.source[:80], output)
            assert not WIDGET_REPR.search(str(data.get("text/plain", ""))), (cell.source[:80], data)
    exported, _ = HTMLExporter().from_notebook_node(notebook)
    assert VIEW_TAG not in exported
    assert not WIDGET_REPR.search(exported), WIDGET_REPR.search(exported)
    assert "Error displaying widget" not in exported and "model not found" not in exported


def test_a_prompt_nobody_saw_leaves_only_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nbclient shows no widget: the prompt is denied after the probe, and what the saved
    notebook and its export keep is the record line, not the widget or its repr."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%%agent\nWrite out.txt"),
    ]
    with MessagesServer() as server:
        server.add_turns(
            Turn([tool_use("Write", {"file_path": "out.txt", "content": "x\n"})]),
            Turn([text("Left it alone.")]),
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / ".toolhost"))
        monkeypatch.delenv("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT", raising=False)
        NotebookClient(
            notebook, timeout=120, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    outputs = notebook.cells[1].outputs
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    record = "Denied Write: out.txt — No front end that shows widgets is connected"
    assert record in streams and streams.count("(no front end showed it)") == 1, streams
    assert not (tmp_path / "out.txt").exists()
    for output in outputs:
        assert WIDGET_VIEW not in output.get("data", {}), output
    exported, _ = HTMLExporter().from_notebook_node(notebook)
    assert not WIDGET_REPR.search(exported) and VIEW_TAG not in exported
    assert record in exported
