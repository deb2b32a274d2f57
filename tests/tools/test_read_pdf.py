"""Read on real PDF files (written here byte by byte, so no PDF library writes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import read

pytest.importorskip("pypdf")


def write_pdf(path: Path, texts: list[str]) -> Path:
    """A valid PDF with one page per text, in Helvetica."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(texts)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(texts)} >>".encode())
    font = 3 + 2 * len(texts)
    for i, text in enumerate(texts):
        stream = f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


async def run_read(tmp_path: Path, **input: Any) -> Any:
    context = ToolUseContext(options=ToolUseOptions(tools=[read.make_tool()]), cwd=tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path / "results"))
    return await pipeline.run(ToolCall("t", "Read", input), context), context


async def test_pdf_pages_are_read_as_text(tmp_path: Path) -> None:
    write_pdf(tmp_path / "report.pdf", ["Revenue grew", "Costs fell", "Outlook stable"])
    whole, context = await run_read(tmp_path, file_path="report.pdf")
    assert not whole.is_error
    assert "--- page 1 of 3 ---\nRevenue grew" in whole.content
    assert "--- page 3 of 3 ---\nOutlook stable" in whole.content
    assert context.read_file_state.get(tmp_path / "report.pdf") is not None
    part, _ = await run_read(tmp_path, file_path="report.pdf", pages="2-3")
    assert "Revenue" not in part.content and "--- page 2 of 3 ---\nCosts fell" in part.content


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ("0", "not a range of pages counted from 1"),
        ("3-2", "not a range of pages counted from 1"),
        ("9", "starts after the last page (3)"),
        ("one", 'must look like "3" or "1-5"'),
    ],
)
async def test_bad_page_ranges_are_clear_errors(tmp_path: Path, pages: str, message: str) -> None:
    write_pdf(tmp_path / "r.pdf", ["a", "b", "c"])
    result, _ = await run_read(tmp_path, file_path="r.pdf", pages=pages)
    assert result.is_error and message in result.content


async def test_long_pdf_needs_pages_and_broken_pdf_is_refused(tmp_path: Path) -> None:
    write_pdf(tmp_path / "long.pdf", [f"p{i}" for i in range(25)])
    result, _ = await run_read(tmp_path, file_path="long.pdf")
    assert result.is_error and "has 25 pages" in result.content
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf")
    broken, _ = await run_read(tmp_path, file_path="broken.pdf")
    assert broken.is_error and "broken.pdf" in broken.content
    text_pages, _ = await run_read(tmp_path, file_path="long.pdf", pages="21-25")
    assert "--- page 25 of 25 ---\np24" in text_pages.content
    (tmp_path / "notes.txt").write_text("x")
    wrong, _ = await run_read(tmp_path, file_path="notes.txt", pages="1")
    assert wrong.is_error and "`pages` is for PDF files" in wrong.content
