"""PDF pages as text, for Read's `pages` parameter (needs the optional `pypdf` package)."""

from __future__ import annotations

import re
from pathlib import Path

from ...core.types import ToolInputError

MAX_PAGES = 20
"""Pages one call returns at most; more are read in several calls."""

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_pages(spec: str | None, count: int) -> range:
    """`"3"` or `"1-5"` (1-based, inclusive) as a range of 0-based page indexes."""
    if spec is None:
        if count > MAX_PAGES:
            raise ToolInputError(
                f"This PDF has {count} pages; Read returns at most {MAX_PAGES} at once. "
                'Give `pages`, e.g. pages="1-20".'
            )
        return range(count)
    match = _RANGE.match(spec)
    if match is None:
        raise ToolInputError(f'`pages` must look like "3" or "1-5", not {spec!r}')
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        raise ToolInputError(f"`pages` {spec!r} is not a range of pages counted from 1")
    if first > count:
        raise ToolInputError(f"`pages` {spec!r} starts after the last page ({count})")
    if last - first + 1 > MAX_PAGES:
        raise ToolInputError(f"`pages` may name at most {MAX_PAGES} pages per call")
    return range(first - 1, min(last, count))


def read_pdf(source: Path, pages: str | None, *, name: Path | None = None) -> str:
    """The text of the chosen pages, each under a `--- page N of M ---` header; read from
    `source`, named `name` (default `source`) in messages."""
    path = name or source
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise ToolInputError(
            f"{path} is a PDF, and reading PDFs needs the pypdf package "
            "(pip install 'jupyter-toolhost[pdf]')."
        ) from None
    try:
        reader = PdfReader(source)
        count = len(reader.pages)
        chosen = parse_pages(pages, count)
        parts = [
            f"--- page {i + 1} of {count} ---\n{(reader.pages[i].extract_text() or '').strip()}"
            for i in chosen
        ]
    except PdfReadError as exc:
        raise ToolInputError(f"{path} is not a readable PDF: {exc}") from None
    return "\n\n".join(parts) or f"(the PDF has {count} pages and no text on the ones read)"
