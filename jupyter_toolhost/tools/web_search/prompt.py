"""What the model is told about WebSearch."""

from __future__ import annotations

NAME = "WebSearch"

DESCRIPTION = """Searches the web and returns result titles, URLs and snippets.

Usage:
- Use it for information newer than your training, or that you need to cite.
- `allowed_domains` keeps only results from those domains; `blocked_domains` drops them.
- Cite the URLs you use in your answer."""
