"""A call's result as a card shows it: a preview that says when it is cut and what is left,
where a saved result lives, and sizes written one way in every view.

- **Sizes** are bytes of the saved file, in KB of 1,024 bytes (`106.3 KB`), as the
  `<persisted-output>` block the model reads writes them (`106.3KB`) and as the lab
  extension's viewer shows them, so a card, its HTML, the viewer and the model agree.
- **A cut preview** ends with a marker line: `… 19,512 more lines, 106.3 KB saved`.
- **Paths** are relative to the kernel's working directory (the notebook's folder).
- **The full output**: the server refuses hidden folders such as `.toolhost/`, so no HTML
  links to it (such a link 404s in Notebook 7 and in every export). The HTML says where the
  file lives, in the notebook's folder, and how to show it in a running notebook through the
  kernel: `%agent output <path>`. The lab extension opens it through the kernel, too.
- **No raw `<tool_use_error>` tags**: that wrapper is for the model; people read the message.

Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ...core.numbers import format_number
from .render import FG2, PRE, esc, relative_path, shown_path

PREVIEW_CHARS = 2_000
"""How much of a result a card shows (the rest stays in the JSON payload and on disk)."""
KB = 1_024
"""Bytes in the KB people read (as in the `<persisted-output>` block the model reads)."""
OUTPUT_COMMAND = "%agent output"
"""The magic that shows a saved result in full, through the kernel."""

_PERSISTED_BLOCK = re.compile(
    r"<persisted-output>\nOutput too large \(([^)\n]*)\)\. Full output saved to: ([^\n]+)\n"
)
_ERROR_TAGS = re.compile(r"</?tool_use_error>")


def strip_error_tags(text: str) -> str:
    """The text without the `<tool_use_error>` wrapper the model reads."""
    return _ERROR_TAGS.sub("", text)


def size_of_path(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _count_lines(path: str) -> int | None:
    """Lines in the file (a last line without a newline counts), read in 1 MiB chunks."""
    count, last = 0, b"\n"
    try:
        with open(path, "rb") as file:
            while chunk := file.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    return count + (last != b"\n")


def cut_marker(*, shown: str, path: str | None, total_chars: int | None = None) -> str:
    """The line that ends a cut preview: `… 19,512 more lines, 106.3 KB saved`, or for a
    result kept in the notebook only, `… 1,234 more characters`."""
    shown_lines = shown.count("\n") + (not shown.endswith("\n"))
    if path is not None:
        size, lines = size_of_path(path), _count_lines(path)
        if size is not None and lines is not None:
            more = max(0, lines - shown_lines)
            lines_left = f"{format_number(more)} more line{'s' * (more != 1)}"
            return f"… {lines_left}, {format_number(size, 'bytes')} saved"
    if total_chars is not None and total_chars > len(shown):
        more = total_chars - len(shown)
        return f"… {format_number(more)} more character{'s' * (more != 1)}"
    return "…"


@dataclass(frozen=True, slots=True)
class PersistedOutput:
    """Where a big result was saved: the full path (JSON only) and what text may show."""

    path: str
    size: str
    """`106.3 KB` (the file's size), else the size the `<persisted-output>` block states."""

    @property
    def shown_path(self) -> str:
        """The path relative to the working directory (the notebook's folder); for a result
        saved outside it, only `tool-results/<file>` (no machine's absolute path is shown)."""
        return shown_path(self.path)

    @property
    def in_notebook_folder(self) -> bool:
        return relative_path(self.path) is not None


def saved_path_in(text: str) -> str | None:
    """The path a `<persisted-output>` block in `text` names, if any."""
    found = _PERSISTED_BLOCK.search(text)
    return found.group(2).strip() if found else None


def persisted_output_of(
    result: str, persisted_path: str | None, original_size: int | None
) -> PersistedOutput | None:
    """A result's persisted output: from the pipeline's fields, or read from the
    `<persisted-output>` block of a tool that saved its own output (Bash)."""
    found = _PERSISTED_BLOCK.search(result)
    path = persisted_path or (found.group(2).strip() if found else None)
    if path is None:
        return None
    size = size_of_path(path)
    if size is not None:
        shown = format_number(size, "bytes")
    elif found:
        shown = found.group(1).replace("KB", " KB").replace("MB", " MB").replace("  ", " ")
    elif original_size is not None:
        shown = f"{format_number(original_size)} characters"
    else:
        shown = f"{format_number(len(result))} characters"
    return PersistedOutput(path, shown)


def persisted_plain(persisted: PersistedOutput) -> str:
    return f"  output: {persisted.size}, saved to {persisted.shown_path}"


def clip(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= PREVIEW_CHARS else (text[:PREVIEW_CHARS], True)


def preview_of_persisted(result: str) -> str:
    """The preview inside the first `<persisted-output>` block, and any text after it
    (without the block's header and its absolute path); else the clipped text."""
    start = result.find("Preview (first")
    if start < 0:
        return clip(result)[0]
    body = result[result.find("\n", start) + 1 :]
    preview, _, rest = body.partition("</persisted-output>")
    rest = _PERSISTED_BLOCK.sub("<persisted-output>\n", rest).strip("\n")
    return clip(preview.rstrip("\n") + (f"\n{rest}" if rest else ""))[0]


def result_html(result: str, persisted: PersistedOutput | None) -> str:
    """A result in HTML: a saved one says where it lives and ends its preview with the cut
    marker; a long one is a collapsed, height-capped preview; a short one a line."""
    marker_style = f'style="color:{FG2};font-style:italic"'
    if persisted is not None:
        shown = esc(persisted.shown_path)
        preview = preview_of_persisted(result)
        marker = cut_marker(shown=preview, path=persisted.path)
        where = (
            f"in the notebook's folder, <code>{shown}</code> (not part of this page; in a "
            f"running notebook <code>{OUTPUT_COMMAND} {shown}</code> shows it all)"
            if persisted.in_notebook_folder
            else f"<code>{shown}</code>, on the machine that ran the kernel"
        )
        return (
            f'<div class="toolhost-saved">output: {esc(persisted.size)}, saved {where}</div>'
            f"<details><summary>Preview</summary>"
            f'<pre style="{PRE}">{esc(preview)}</pre>'
            f'<div class="toolhost-cut" {marker_style}>{esc(marker)}</div></details>'
        )
    text, cut = clip(result)
    if "\n" not in text and not cut and len(text) <= 100:
        return f'<div style="color:{FG2}">{esc(text)}</div>'
    label = f"output ({format_number(len(result))} characters)"
    marker = (
        f'<div class="toolhost-cut" {marker_style}>'
        f"{esc(cut_marker(shown=text, path=None, total_chars=len(result)))}</div>"
        if cut
        else ""
    )
    return (
        f'<details><summary>{label}</summary><pre style="{PRE}">{esc(text)}</pre>{marker}</details>'
    )


def blocks_text(blocks: list[dict[str, Any]]) -> str:
    """A result given as content blocks, as text (images and references named)."""
    parts = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            source = block.get("source")
            media = source.get("media_type", "") if isinstance(source, dict) else ""
            parts.append(f"[image: {media or 'unknown type'}]")
        elif block.get("type") == "tool_reference":
            parts.append(f"loaded {block.get('tool_name', '?')}")
        else:
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts)
