"""What the model is told about Read."""

from __future__ import annotations

NAME = "Read"

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_BYTES = 256 * 1024
MAX_IMAGE_FILE_BYTES = 50 * 1024 * 1024

DESCRIPTION = f"""Reads a file from the local filesystem.

Usage:
- `file_path` is absolute, or relative to the session's working directory.
- By default it reads up to {MAX_LINES} lines from the start of the file. Pass `offset` (the
  line number to start at, 1-based) and `limit` (how many lines) to read a part of a long
  file; a file over {MAX_OUTPUT_BYTES // 1024} KB must be read in parts this way.
- Lines longer than {MAX_LINE_CHARS} characters are cut.
- Results are in `cat -n` format: the line number, a tab, then the line.
- Images (PNG, JPEG, GIF, WebP) are shown to you as images.
- Jupyter notebooks (.ipynb) are shown cell by cell with their outputs.
- PDF files are returned as text, page by page; pass `pages` ("3" or "1-5", at most 20 per
  call) for a long one.
- Binary files are refused; directories too (use Glob, or `ls` with Bash).
- Read a file before editing it with Edit, Write or NotebookEdit: those tools refuse a file
  that was not read, or that changed on disk since it was read.
- You can call several tools in one response; read several files at once when useful."""
