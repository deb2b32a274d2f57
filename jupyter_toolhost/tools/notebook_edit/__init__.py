"""NotebookEdit: replace, insert or delete one cell of an .ipynb on disk, with nbformat.

The notebook must have been Read (and be unchanged since). The edited notebook is validated
before anything is written, and written atomically. A notebook that is open in a front end
is not changed there: the result says so (see `FRONT_END_NOTE`), and warns more strongly when
the target is the notebook of the running kernel (`JPY_SESSION_NAME`, which Jupyter Server
sets to the notebook's path for its kernels).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from .._files import (
    read_text_file,
    require_fresh_read,
    require_regular_file,
    write_bytes_atomic,
)
from .prompt import DESCRIPTION, FRONT_END_NOTE, NAME, OWN_NOTEBOOK_NOTE


class NotebookEditInput(BaseModel):
    """Input of NotebookEdit."""

    model_config = ConfigDict(extra="forbid")

    notebook_path: str = Field(description="The .ipynb file: absolute, or relative to the cwd.")
    cell_id: str | None = Field(
        default=None, description='The cell id, or a 0-based index ("3", "cell-3").'
    )
    new_source: str = Field(default="", description="The new source of the cell.")
    cell_type: Literal["code", "markdown"] | None = Field(
        default=None, description="The cell type (required to insert)."
    )
    edit_mode: Literal["replace", "insert", "delete"] = Field(
        default="replace", description='"replace", "insert" or "delete".'
    )


def find_cell(notebook: Any, cell_id: str) -> int:
    """The index of a cell given by id or by index; raises `ToolInputError` if none."""
    for index, cell in enumerate(notebook.cells):
        if cell.get("id") == cell_id:
            return index
    text = cell_id.removeprefix("cell-")
    if text.isdigit():
        index = int(text)
        if index < len(notebook.cells):
            return index
        raise ToolInputError(
            f"Cell index {index} is out of range: the notebook has {len(notebook.cells)} cells."
        )
    raise ToolInputError(f'No cell with id "{cell_id}" in the notebook.')


def edit_notebook(input: NotebookEditInput, context: ToolUseContext) -> str:
    """Apply one cell edit and write the notebook back; nothing is written on any error."""
    path = context.resolve_path(input.notebook_path)
    if path.suffix.lower() != ".ipynb":
        raise ToolInputError(f"{path} is not a notebook (.ipynb); use Edit for other files.")
    require_regular_file(path)
    require_fresh_read(context, path)
    import nbformat  # slow to import (jsonschema): only when a notebook is edited

    try:
        notebook = nbformat.reads(read_text_file(path, context).text, as_version=4)
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot read {path}") from None
    except ToolError:
        raise
    except Exception as exc:
        raise ToolInputError(f"{path} is not a valid notebook: {exc}") from None
    done = _apply(notebook, input)
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        raise ToolInputError(f"The edit would make the notebook invalid: {exc.message}") from None
    text = nbformat.writes(notebook)
    try:
        data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
        write_bytes_atomic(path, data, context=context)
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot write {path}") from None
    context.read_file_state.record(path)
    note = OWN_NOTEBOOK_NOTE if _is_kernel_notebook(path, context) else FRONT_END_NOTE
    return f"{done}\n\n{note}"


def _apply(notebook: Any, input: NotebookEditInput) -> str:
    cells = notebook.cells
    match input.edit_mode:
        case "insert":
            if input.cell_type is None:
                raise ToolInputError("cell_type is required to insert a cell.")
            at = find_cell(notebook, input.cell_id) + 1 if input.cell_id is not None else 0
            cell = _new_cell(input.cell_type, input.new_source, notebook)
            cells.insert(at, cell)
            return f"Inserted a {input.cell_type} cell at index {at} (id {cell.get('id')})."
        case "delete":
            index = find_cell(notebook, _required_id(input))
            removed = cells.pop(index)
            return f"Deleted cell {index} (id {removed.get('id')})."
        case "replace":
            index = find_cell(notebook, _required_id(input))
            old = cells[index]
            kind = input.cell_type or old.cell_type
            if kind != old.cell_type:
                cell = _new_cell(kind, input.new_source, notebook)
                if "id" in old:
                    cell["id"] = old["id"]
                cells[index] = cell
            else:
                old.source = input.new_source
                if old.cell_type == "code":
                    old.outputs = []
                    old.execution_count = None
            return f"Updated cell {index} (id {cells[index].get('id')})."
        case _:
            assert_never(input.edit_mode)


def _required_id(input: NotebookEditInput) -> str:
    if input.cell_id is None:
        raise ToolInputError(f"cell_id is required to {input.edit_mode} a cell.")
    return input.cell_id


def _new_cell(kind: str, source: str, notebook: Any) -> Any:
    import nbformat

    cell = (
        nbformat.v4.new_code_cell(source)
        if kind == "code"
        else nbformat.v4.new_markdown_cell(source)
    )
    if (notebook.nbformat, notebook.nbformat_minor) < (4, 5):
        cell.pop("id", None)  # cell ids exist from nbformat 4.5 on
    return cell


def _is_kernel_notebook(path: Path, context: ToolUseContext) -> bool:
    session = os.environ.get("JPY_SESSION_NAME")
    if not session:
        return False
    try:
        return context.resolve_path(session).resolve() == path.resolve()
    except OSError:
        return False


def _path_of(input: NotebookEditInput) -> str:
    return input.notebook_path


def make_tool() -> Tool[NotebookEditInput]:
    """A fresh NotebookEdit tool."""
    return build_tool(
        name=NAME,
        input_model=NotebookEditInput,
        call=edit_notebook,
        description=DESCRIPTION,
        read_only=False,
        concurrency_safe=False,
        get_path=_path_of,
        render_tool_use=_path_of,
        search_hint="jupyter notebook ipynb cell edit insert delete",
    )


TOOL = make_tool()
