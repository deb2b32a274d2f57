"""Read: text files with line numbers, images, notebooks; records what was read.

Read opts out of the result budget (`max_result_size_chars` is infinite) because it has a
cap of its own: at most `MAX_LINES` lines and `MAX_OUTPUT_BYTES` of text per call, with a
note saying how to page on with `offset`/`limit`. Text is streamed line by line, so a page
from the middle of a huge file costs no more memory than the page.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ContentBlock, ToolInputError
from .._files import SNIFF_BYTES, detect_encoding, looks_binary, require_regular_file
from .._opened import open_checked, reopened
from .media import IMAGE_TYPES, image_blocks, render_notebook
from .pdf import read_pdf
from .prompt import DESCRIPTION, MAX_LINE_CHARS, MAX_LINES, MAX_OUTPUT_BYTES, NAME

_BINARY_SUFFIX_TEXT = (
    ".pdf .zip .gz .tgz .bz2 .xz .7z .tar .exe .dll .so .dylib .o .a .class .jar .pyc .whl "
    ".bin .dat .db .sqlite .parquet .feather .npy .npz .pkl .pickle .h5 .hdf5 .mp3 .mp4 .wav "
    ".avi .mov .ico .bmp .tiff .woff .woff2 .ttf .otf"
)
BINARY_SUFFIXES = frozenset(_BINARY_SUFFIX_TEXT.split())


class ReadInput(BaseModel):
    """Input of Read."""

    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(description="The file to read: absolute, or relative to the cwd.")
    offset: int | None = Field(
        default=None, ge=0, description="The line number to start reading from (1-based)."
    )
    limit: int | None = Field(default=None, ge=1, description="The number of lines to read.")
    pages: str | None = Field(
        default=None,
        description='PDF files only: the pages to read, e.g. "3" or "1-5" (at most 20).',
    )


def read_file(input: ReadInput, context: ToolUseContext) -> str | list[ContentBlock]:
    """Read one file; raises `ToolInputError` with a clear message for anything unreadable."""
    path = context.resolve_path(input.file_path)
    require_regular_file(path)
    try:
        with open_checked(context, path) as fd:
            return _read(path, fd, input, context)
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot read {path}") from None


def _read(
    path: Path, fd: int, input: ReadInput, context: ToolUseContext
) -> str | list[ContentBlock]:
    """Read the file `fd` holds (opened and checked as `path`); `path` names it."""
    suffix = path.suffix.lower()
    if suffix in IMAGE_TYPES:
        blocks = image_blocks(path, source=reopened(fd))
        context.read_file_state.record(path)
        return blocks
    if suffix == ".ipynb":
        text = render_notebook(path, source=reopened(fd))
        context.read_file_state.record(path)
        return text
    if suffix == ".pdf":
        text = read_pdf(reopened(fd), input.pages, name=path)
        context.read_file_state.record(path, partial=input.pages is not None)
        return text
    if input.pages is not None:
        raise ToolInputError("`pages` is for PDF files; use `offset` and `limit` for text")
    sample = os.pread(fd, 64 * 1024, 0)
    if suffix in BINARY_SUFFIXES or looks_binary(sample[:SNIFF_BYTES]):
        raise ToolInputError(
            f"{path} is a binary file ({suffix or 'no extension'}); Read shows text files, "
            "images, notebooks and PDFs only."
        )
    size = os.fstat(fd).st_size
    paged = input.offset is not None or input.limit is not None
    if size > MAX_OUTPUT_BYTES and not paged:
        raise ToolInputError(
            f"File content ({size // 1024} KB) exceeds the maximum that Read returns at once "
            f"({MAX_OUTPUT_BYTES // 1024} KB). Use `offset` and `limit` to read it in parts "
            "(e.g. offset=1, limit=1000), or search it with Grep."
        )
    if size == 0:
        context.read_file_state.record(path)
        return "<system-reminder>The file exists but is empty.</system-reminder>"
    encoding = detect_encoding(sample, complete=len(sample) == size)
    text, partial = _page(fd, encoding, input)
    context.read_file_state.record(path, partial=partial or paged)
    return text


def _page(fd: int, encoding: str, input: ReadInput) -> tuple[str, bool]:
    """Lines `offset..offset+limit` in `cat -n` form; (text, whether the file goes on)."""
    start = max(input.offset or 1, 1)
    limit = min(input.limit or MAX_LINES, MAX_LINES)
    out: list[str] = []
    used = 0
    more = False
    last = start - 1
    os.lseek(fd, 0, os.SEEK_SET)
    with open(os.dup(fd), encoding=encoding, errors="replace", newline=None) as handle:
        lines = itertools.islice(enumerate(handle, start=1), start - 1, None)
        for number, line in lines:
            if number >= start + limit:
                more = True
                break
            line = line.rstrip("\n")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + "… [line cut]"
            entry = f"{number:>6}\t{line}"
            used += len(entry.encode("utf-8")) + 1
            if used > MAX_OUTPUT_BYTES and out:
                more = True
                break
            out.append(entry)
            last = number
    if not out:
        return (
            f"<system-reminder>The file is shorter than offset {start}; "
            "read it from offset 1.</system-reminder>",
            True,
        )
    text = "\n".join(out)
    if more:
        text += (
            f"\n\n[Showing lines {start}-{last}; the file goes on. "
            f"Call Read with offset={last + 1} to continue.]"
        )
    return text, more or start > 1


def _path_of(input: ReadInput) -> str:
    return input.file_path


def make_tool() -> Tool[ReadInput]:
    """A fresh Read tool."""
    return build_tool(
        name=NAME,
        input_model=ReadInput,
        call=read_file,
        description=DESCRIPTION,
        max_result_size_chars=float("inf"),
        read_only=True,
        concurrency_safe=True,
        get_path=_path_of,
        render_tool_use=_path_of,
        search_hint="read view open show file contents lines image notebook",
    )


TOOL = make_tool()
