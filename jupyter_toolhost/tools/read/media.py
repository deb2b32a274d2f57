"""Non-plain-text files Read understands: images as image blocks, notebooks cell by cell."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...core.images import fit_image
from ...core.types import ContentBlock, ToolInputError
from .prompt import MAX_IMAGE_FILE_BYTES

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MAX_CELL_OUTPUT_CHARS = 10_000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def image_blocks(path: Path, *, source: Path | None = None) -> list[ContentBlock]:
    """The image as one Messages API image block (base64), fitted for the API: its media
    type read from its bytes, scaled down to what the model sees (`images.fit_image`), with
    a text block saying so when anything was changed. `source` is where its bytes are read
    from (default `path`, which names it)."""
    source = source or path
    size = source.stat().st_size
    if size > MAX_IMAGE_FILE_BYTES:
        raise ToolInputError(
            f"{path} is an image of {size // (1024 * 1024)} MB; image files over "
            f"{MAX_IMAGE_FILE_BYTES // (1024 * 1024)} MB are not read."
        )
    fitted = fit_image(
        source.read_bytes(), declared=IMAGE_TYPES[path.suffix.lower()], name=path.name
    )
    if fitted.data is None:
        raise ToolInputError(fitted.note or f"{path} could not be read as an image.")
    blocks: list[ContentBlock] = [fitted.block()]
    if fitted.note:
        blocks.append({"type": "text", "text": fitted.note})
    return blocks


def render_notebook(path: Path, *, source: Path | None = None) -> str:
    """Every cell with its index, id, type, source and text outputs (read from `source`,
    default `path`)."""
    import nbformat

    try:
        notebook = nbformat.read(str(source or path), as_version=4)
    except Exception as exc:
        raise ToolInputError(f"{path} is not a valid notebook: {exc}") from None
    parts: list[str] = []
    for index, cell in enumerate(notebook.cells):
        cell_id = cell.get("id", "")
        parts.append(f'<cell index="{index}" id="{cell_id}" type="{cell.cell_type}">')
        parts.append(cell.source)
        parts.append("</cell>")
        for output in cell.get("outputs", []):
            text = _output_text(output)
            if text:
                parts.append(f"<output>\n{text}\n</output>")
    if not parts:
        return "(the notebook has no cells)"
    return "\n".join(parts)


def _output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _joined(output.get("text", ""))
    elif kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        if "text/plain" in data:
            text = _joined(data["text/plain"])
        else:
            text = " ".join(f"[{mime} output]" for mime in data)
    elif kind == "error":
        traceback = "\n".join(output.get("traceback", []))
        text = _ANSI.sub("", traceback) or f"{output.get('ename')}: {output.get('evalue')}"
    else:
        return ""
    if len(text) > MAX_CELL_OUTPUT_CHARS:
        text = text[:MAX_CELL_OUTPUT_CHARS] + f"\n... (output cut at {MAX_CELL_OUTPUT_CHARS} chars)"
    return text.rstrip("\n")


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)
