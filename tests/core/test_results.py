"""The result budget through the real pipeline: thresholds, persistence, aggregate budget."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import (
    MESSAGE_BUDGET_CHARS,
    ResultStore,
    content_size,
    effective_threshold,
    preview,
)
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline


class SizeInput(BaseModel):
    size: int
    char: str = "x"


def produce(input: SizeInput, context: ToolUseContext) -> str:
    return (input.char * input.size)[: input.size]


def setup(tmp_path: Path, **kwargs: float) -> tuple[ToolUseContext, Pipeline]:
    tool = build_tool(
        name="Produce", input_model=SizeInput, call=produce, description="d", **kwargs
    )
    context = ToolUseContext(options=ToolUseOptions(tools=[tool]), cwd=tmp_path)
    return context, Pipeline(results=ResultStore(context.session_dir() / "tool-results"))


def test_effective_threshold() -> None:
    assert effective_threshold(100_000) == 50_000
    assert effective_threshold(10_000) == 10_000
    assert effective_threshold(float("inf")) == float("inf")


@pytest.mark.parametrize(("size", "persisted"), [(49_999, False), (50_000, False), (50_001, True)])
async def test_threshold_boundary(tmp_path: Path, size: int, persisted: bool) -> None:
    context, pipeline = setup(tmp_path)
    result = await pipeline.run(ToolCall(f"toolu_{size}", "Produce", {"size": size}), context)
    path = context.session_dir() / "tool-results" / f"toolu_{size}.txt"
    assert path.exists() is persisted
    if not persisted:
        assert result.content == "x" * size and result.persisted_path is None
        return
    assert path.read_text(encoding="utf-8") == "x" * size
    assert result.persisted_path == str(path)
    assert result.original_size == size
    text = str(result.content)
    assert text.startswith("<persisted-output>\nOutput too large (48.8KB). Full output saved to: ")
    assert str(path) in text and text.endswith("</persisted-output>")
    assert "x" * 2000 + "...\n</persisted-output>" in text


async def test_declared_cap_below_default_and_infinite_opt_out(tmp_path: Path) -> None:
    context, pipeline = setup(tmp_path, max_result_size_chars=100)
    small = await pipeline.run(ToolCall("a", "Produce", {"size": 101}), context)
    assert small.persisted_path is not None
    context, pipeline = setup(tmp_path, max_result_size_chars=float("inf"))
    big = await pipeline.run(ToolCall("b", "Produce", {"size": 120_000}), context)
    assert big.persisted_path is None and content_size(big.content) == 120_000


async def test_non_ascii_preview_is_cut_on_a_character_boundary(tmp_path: Path) -> None:
    context, pipeline = setup(tmp_path)
    result = await pipeline.run(ToolCall("u", "Produce", {"size": 60_000, "char": "日"}), context)
    text = str(result.content)
    body = text.split("Preview (first 2KB):\n", 1)[1].removesuffix("...\n</persisted-output>")
    assert set(body) == {"日"}
    assert len(body.encode("utf-8")) == 1998  # 666 three-byte characters fit in 2,000 bytes
    assert Path(str(result.persisted_path)).read_text(encoding="utf-8") == "日" * 60_000
    mixed, cut = preview("é" * 1500)
    assert cut and len(mixed.encode()) == 2000 and set(mixed) == {"é"}


async def test_persisted_result_is_reused_with_identical_text(tmp_path: Path) -> None:
    context, pipeline = setup(tmp_path)
    first = await pipeline.run(ToolCall("same", "Produce", {"size": 70_000}), context)
    path = Path(str(first.persisted_path))
    stamp = path.stat().st_mtime_ns
    again = await pipeline.run(ToolCall("same", "Produce", {"size": 70_000}), context)
    assert again.content == first.content and again.persisted_path == str(path)
    assert path.stat().st_mtime_ns == stamp
    # A repeated id (a cassette's `toolu_01`) with other text is another result.
    other = await pipeline.run(ToolCall("same", "Produce", {"size": 70_000, "char": "y"}), context)
    assert other.content != first.content and other.persisted_path != str(path)
    assert Path(str(other.persisted_path)).read_text(encoding="utf-8") == "y" * 70_000
    assert path.read_text(encoding="utf-8") == "x" * 70_000


def test_existing_file_is_never_overwritten_nor_pointed_at(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "keep.txt").write_text("original", encoding="utf-8")
    (tmp_path / "results" / "keep-2.txt").mkdir()  # not even a file
    path, replacement = store.persist("keep", "replacement")
    assert (tmp_path / "results" / "keep.txt").read_text(encoding="utf-8") == "original"
    assert path.name == "keep-3.txt" and path.read_text(encoding="utf-8") == "replacement"
    assert f"saved to: {path}" in replacement
    same = ResultStore(tmp_path / "results")
    assert same.persist("keep", "original")[0].name == "keep.txt"  # same content: reused
    names = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert names == ["keep-2.txt", "keep-3.txt", "keep.txt"]


def test_a_crlf_text_is_recognised_as_the_same_content(tmp_path: Path) -> None:
    text = "line\r\n" * 10
    first = ResultStore(tmp_path / "r").persist("crlf", text)[0]
    again = ResultStore(tmp_path / "r").persist("crlf", text)[0]
    assert first == again and first.read_bytes() == text.encode()


async def test_concurrent_persistence_leaves_only_whole_files(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r")
    texts = {f"id{i}": str(i) * 80_000 for i in range(8)}
    await asyncio.gather(*(asyncio.to_thread(store.persist, k, v) for k, v in texts.items()))
    files = sorted(os.listdir(tmp_path / "r"))
    assert files == sorted(f"{k}.txt" for k in texts)
    for key, text in texts.items():
        assert (tmp_path / "r" / f"{key}.txt").read_text(encoding="utf-8") == text


def test_aggregate_budget_persists_the_largest_first(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r")
    sizes = {"a": 45_000, "b": 49_000, "c": 48_000, "d": 47_000, "e": 30_000, "f": 1_000}
    results = [ToolResult(k, k * n, tool_name="T") for k, n in sizes.items()]
    assert sum(sizes.values()) > MESSAGE_BUDGET_CHARS
    store.apply_message_budget(results)
    persisted = [r.tool_use_id for r in results if r.persisted_path]
    assert persisted == ["b"]
    assert sum(content_size(r.content) for r in results) <= MESSAGE_BUDGET_CHARS
    many = [ToolResult(f"m{i}", "z" * 49_000, tool_name="T") for i in range(8)]
    store.apply_message_budget(many)
    assert sum(1 for r in many if r.persisted_path) == 5
    assert sum(content_size(r.content) for r in many) <= MESSAGE_BUDGET_CHARS
    for result in many:
        if result.persisted_path:
            assert re.search(r"Output too large \(47\.9KB\)", str(result.content))


def test_error_results_count_in_the_budget_and_images_stay_inline(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}
    results = [
        ToolResult("err", "e" * 150_000, is_error=True),
        ToolResult("img", [image, {"type": "text", "text": "t" * 150_000}]),
    ]
    store.apply_message_budget(results)
    assert results[0].persisted_path is not None and results[0].is_error
    assert Path(results[0].persisted_path).read_text(encoding="utf-8") == "e" * 150_000
    assert results[1].persisted_path is None


def test_a_store_that_cannot_write_answers_with_an_error_and_keeps_the_text(
    tmp_path: Path,
) -> None:
    (tmp_path / "blocked").write_text("a file", encoding="utf-8")
    store = ResultStore(tmp_path / "blocked" / "r")
    result = store.apply_threshold(ToolResult("big", "b" * 60_000, tool_name="T"), 50_000)
    assert result.is_error and result.persisted_path is None
    assert "could not be saved" in str(result.content) and "b" * 1_000 in str(result.content)
    assert store.unsaved["big"] == "b" * 60_000
    again = store.apply_threshold(ToolResult("big", "b" * 60_000, tool_name="T"), 50_000)
    assert again.content == result.content  # the same text every time (prompt cache)
    many = [ToolResult(f"m{i}", "z" * 49_000, tool_name="T") for i in range(5)]
    store.apply_message_budget(many)  # does not raise
    assert sum(1 for r in many if r.is_error) >= 1
