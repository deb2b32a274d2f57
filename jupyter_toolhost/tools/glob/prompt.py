"""What the model is told about Glob."""

from __future__ import annotations

NAME = "Glob"

MAX_RESULTS = 100

DESCRIPTION = f"""Fast file pattern matching for any size of directory tree.

Usage:
- Patterns like "**/*.py", "src/**/*.ts" or "*.{{csv,parquet}}". A pattern without a "/"
  matches file names at any depth ("*.py" finds every Python file); one with a "/" is
  anchored at the search directory.
- `path` is the directory to search (default: the session's working directory).
- Files ignored by .gitignore are skipped; hidden files are included; `.git` and the
  tool host's own `.toolhost` state never.
- Returns absolute paths, most recently modified first, at most {MAX_RESULTS}; a note says
  when there were more (then use a more specific pattern or path).
- To search file contents, use Grep."""
