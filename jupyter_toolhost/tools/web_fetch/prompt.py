"""What the model is told about WebFetch."""

from __future__ import annotations

NAME = "WebFetch"

MAX_REDIRECTS = 5
MAX_BYTES = 10 * 1024 * 1024
TIMEOUT_SECONDS = 30.0
MAX_MARKDOWN_CHARS = 100_000

DESCRIPTION = f"""Fetches a URL and returns its content as Markdown.

Usage:
- `url` must be a full http(s) URL.
- HTML is converted to Markdown; other text (JSON, plain text, XML) is returned as is;
  binary content is refused. Pages over {MAX_BYTES // (1024 * 1024)} MB are refused.
- `prompt` says what to extract from the page. A small, fast model reads the page and
  you get its answer to the prompt (not the page). When no small model is available you
  get the page as Markdown and a note that the prompt was not applied.
- Redirects on the same host are followed (at most {MAX_REDIRECTS}); a redirect to another
  host is reported with its URL instead: fetch that URL if you want it.
- Read-only: it never changes anything locally."""
