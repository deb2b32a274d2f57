"""NotebookEdit (and Read of notebooks) on real .ipynb files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import builtin_tools
from jupyter_toolhost.tools.notebook_edit.prompt import FRONT_END_NOTE, OWN_NOTEBOOK_NOTE


def make_notebook(path: Path, *, minor: int = 5) -> Path:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.nbformat_minor = minor
    code = nbformat.v4.new_code_cell("print('hi')", id="first")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code.execution_count = 1
    notebook.cells = [code, nbformat.v4.new_markdown_cell("# Notes", id="second")]
    if minor < 5:
        for cell in notebook.cells:
            del cell["id"]
    nbformat.write(notebook, str(path))
    return path


def make_context(tmp_path: Path) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=builtin_tools()), cwd=tmp_path)


async def run(context: ToolUseContext, name: str, call_input: dict[str, Any]) -> ToolResult:
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    return await pipeline.run(ToolCall(id="toolu_nb", name=name, input=call_input), context)


async def test_read_renders_cells_with_outputs(tmp_path: Path) -> None:
    make_notebook(tmp_path / "nb.ipynb")
    result = await run(make_context(tmp_path), "Read", {"file_path": "nb.ipynb"})
    text = str(result.content)
    assert '<cell index="0" id="first" type="code">' in text
    assert "print('hi')" in text and "<output>\nhi\n</output>" in text
    assert '<cell index="1" id="second" type="markdown">' in text


async def test_replace_insert_delete(tmp_path: Path) -> None:
    import nbformat

    path = make_notebook(tmp_path / "nb.ipynb")
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "nb.ipynb"})
    replaced = await run(
        context,
        "NotebookEdit",
        {"notebook_path": "nb.ipynb", "cell_id": "first", "new_source": "x = 2"},
    )
    assert not replaced.is_error, replaced.content
    assert FRONT_END_NOTE in str(replaced.content)
    inserted = await run(
        context,
        "NotebookEdit",
        {"notebook_path": "nb.ipynb", "cell_id": "0", "new_source": "## New",
         "cell_type": "markdown", "edit_mode": "insert"},
    )  # fmt: skip
    assert not inserted.is_error, inserted.content
    deleted = await run(
        context,
        "NotebookEdit",
        {"notebook_path": "nb.ipynb", "cell_id": "second", "edit_mode": "delete"},
    )
    assert not deleted.is_error, deleted.content
    notebook = nbformat.read(str(path), as_version=4)
    nbformat.validate(notebook)
    assert [c.source for c in notebook.cells] == ["x = 2", "## New"]
    assert notebook.cells[0].outputs == [] and notebook.cells[0].execution_count is None


async def test_replace_can_convert_the_cell_type_and_old_notebooks_get_no_ids(
    tmp_path: Path,
) -> None:
    import nbformat

    path = make_notebook(tmp_path / "old.ipynb", minor=4)
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "old.ipynb"})
    result = await run(
        context,
        "NotebookEdit",
        {"notebook_path": "old.ipynb", "cell_id": "cell-0", "new_source": "text",
         "cell_type": "markdown"},
    )  # fmt: skip
    assert not result.is_error, result.content
    notebook = nbformat.read(str(path), as_version=4)
    nbformat.validate(notebook)
    assert notebook.cells[0].cell_type == "markdown" and "id" not in notebook.cells[0]


@pytest.mark.parametrize(
    ("call_input", "expected"),
    [
        ({"cell_id": "nope", "new_source": "x"}, 'No cell with id "nope"'),
        ({"cell_id": "7", "new_source": "x"}, "out of range"),
        ({"new_source": "x", "edit_mode": "insert"}, "cell_type is required"),
        ({"edit_mode": "delete"}, "cell_id is required"),
    ],
)
async def test_bad_edits_change_nothing(
    tmp_path: Path, call_input: dict[str, Any], expected: str
) -> None:
    path = make_notebook(tmp_path / "nb.ipynb")
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "nb.ipynb"})
    before = path.read_bytes()
    result = await run(context, "NotebookEdit", {"notebook_path": "nb.ipynb", **call_input})
    assert result.is_error and expected in str(result.content)
    assert path.read_bytes() == before


async def test_refuses_unread_changed_missing_and_non_notebooks(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "nb.ipynb")
    (tmp_path / "broken.ipynb").write_text("{not json")
    context = make_context(tmp_path)
    edit = {"notebook_path": "nb.ipynb", "cell_id": "first", "new_source": "x"}
    unread = await run(context, "NotebookEdit", edit)
    assert unread.is_error and "has not been read" in str(unread.content)
    await run(context, "Read", {"file_path": "nb.ipynb"})
    path.write_text(path.read_text() + "\n\n")  # the front end saved meanwhile
    changed = await run(context, "NotebookEdit", edit)
    assert changed.is_error and "modified since" in str(changed.content)
    missing = await run(context, "NotebookEdit", {**edit, "notebook_path": "gone.ipynb"})
    assert missing.is_error and "does not exist" in str(missing.content)
    not_nb = await run(context, "NotebookEdit", {**edit, "notebook_path": "x.py"})
    assert not_nb.is_error and "not a notebook" in str(not_nb.content)
    context.read_file_state.record(tmp_path / "broken.ipynb")
    broken = await run(context, "NotebookEdit", {**edit, "notebook_path": "broken.ipynb"})
    assert broken.is_error and "not a valid notebook" in str(broken.content)
    assert (tmp_path / "broken.ipynb").read_text() == "{not json"


async def test_editing_the_kernels_own_notebook_warns_strongly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat

    make_notebook(tmp_path / "open.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "open.ipynb"))
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "open.ipynb"})
    result = await run(
        context,
        "NotebookEdit",
        {"notebook_path": "open.ipynb", "cell_id": "second", "new_source": "y"},
    )
    assert not result.is_error
    assert OWN_NOTEBOOK_NOTE in str(result.content)
    # The change is on disk; what the front end shows is its own copy until it reloads.
    assert nbformat.read(str(tmp_path / "open.ipynb"), as_version=4).cells[1].source == "y"
