"""What the model is told about Edit."""

from __future__ import annotations

NAME = "Edit"

MAX_EDIT_BYTES = 32 * 1024 * 1024

DESCRIPTION = """Replaces exact text in a file.

Usage:
- Read the file first: Edit refuses a file that was not read in this conversation, or that
  changed on disk since it was read.
- `old_string` must match the file exactly, including indentation (copy it from Read's
  output without the line number prefix, which is the number and a tab).
- The edit fails when `old_string` is not found, or is found more than once: give more
  surrounding context to make it unique, or set `replace_all` to change every occurrence
  (useful for renaming a variable).
- `new_string` must differ from `old_string`.
- With an empty `old_string` and a file that does not exist, Edit creates the file.
- The file keeps its encoding and line endings; the result shows a short diff."""
