"""What the model is told about Write."""

from __future__ import annotations

NAME = "Write"

DESCRIPTION = """Writes a file to the local filesystem, creating it or replacing it whole.

Usage:
- `file_path` is absolute, or relative to the session's working directory; missing parent
  directories are created.
- An existing file must have been read with Read first (and not changed on disk since);
  otherwise the write is refused and nothing changes.
- An existing file keeps its encoding and its line endings (a CRLF file stays CRLF).
- The write is atomic: readers see the old file or the new one, never half of it.
- Prefer Edit for changing part of an existing file: it sends only the change.
- Do not create documentation files (*.md, README) unless asked to."""
