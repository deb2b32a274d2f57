"""What the model is told about NotebookEdit."""

from __future__ import annotations

NAME = "NotebookEdit"

FRONT_END_NOTE = (
    "Note: a notebook open in a front end (JupyterLab, Notebook) keeps its own copy in the "
    "browser; this edit changed the file on disk only. JupyterLab notices the change when it "
    "next saves the notebook and asks whether to overwrite the file or revert to it: choose "
    "Revert (or File > Reload Notebook from Disk) to keep this edit. A front end that does "
    "not check overwrites the edit on its next save."
)
OWN_NOTEBOOK_NOTE = (
    "Warning: this is the notebook this kernel is running in. The user must reload it from "
    "disk (File > Reload Notebook from Disk) before saving, or the edit will be lost."
)

DESCRIPTION = f"""Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb) on disk.

Usage:
- Read the notebook first; NotebookEdit refuses a notebook that was not read, or that
  changed on disk since.
- `cell_id` is the cell's id as Read shows it; a 0-based index ("3" or "cell-3") also works.
- `edit_mode`: "replace" (default) sets the cell's source (a code cell loses its outputs);
  "insert" adds a new cell after `cell_id` (at the top without `cell_id`) and needs
  `cell_type`; "delete" removes the cell.
- `cell_type` ("code" or "markdown") also converts a cell on replace.
- The notebook is validated before it is written; an invalid result changes nothing.
- {FRONT_END_NOTE}"""
