"""What the model is told about Grep."""

from __future__ import annotations

NAME = "Grep"

DESCRIPTION = """A search tool built on ripgrep.

Usage:
- ALWAYS use Grep for searching file contents; do not run `grep` or `rg` with Bash.
- `pattern` is a regular expression (ripgrep syntax: "log.*Error", "def \\w+"). Literal
  braces need escaping ("interface\\{\\}" to find "interface{}").
- `path`: the file or directory to search (default: the working directory).
- Filter files with `glob` ("*.py", "*.{ts,tsx}") or `type` (py, js, rust, md, ...).
- `output_mode`: "files_with_matches" (default: file paths, most recently modified first),
  "content" (matching lines, "path:line:text"; with `-A`, `-B`, `-C` context lines and
  `-n` line numbers, on by default) or "count" (matches per file).
- `-i` ignores case. `multiline` lets a pattern span lines ("." then matches newlines too).
- `head_limit` keeps only the first N lines or entries.
- Files ignored by .gitignore, hidden files and binary files are skipped."""
