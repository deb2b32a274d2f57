"""The folders and files that keep one user's state, made for that user alone.

What the package keeps of a conversation (saved tool results and Bash output, transcripts,
checkpoints, cassettes, settings, the folder-trust record) holds what the user's data and
the model's answers hold. On a machine several people share, such as a JupyterHub that runs
each student as their own system user, the usual umask (022) would make all of it readable
by everyone else. So every folder the package creates for it is made 0700 (missing parents
too) and every such file 0600, whatever the umask. A folder or file that already exists
keeps its mode: its owner may have opened it on purpose, and a new session's own folder is
always new, so what it holds is private even under an older `.toolhost/` left readable.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder, created (with each missing parent) for its owner alone; raises
    as `Path.mkdir(parents=True, exist_ok=True)` does (a file in the way, no permission)."""
    folder = Path(path)
    missing: list[Path] = []
    at = folder
    while not at.exists() and at.parent != at:
        missing.append(at)
        at = at.parent
    for each in reversed(missing):
        try:
            os.mkdir(each, FOLDER_MODE)
        except FileExistsError:  # made meanwhile (another thread or process), or a file
            if not each.is_dir():
                raise
    if not folder.is_dir():
        raise FileExistsError(errno.EEXIST, "A file is where a folder should be", str(folder))
    return folder


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An `opener` for `open(...)` that creates the file for its owner alone."""
    return os.open(path, flags, FILE_MODE)


def private_file(path: str | os.PathLike[str], *, append: bool = False) -> BinaryIO:
    """`path` open for writing bytes (emptied, or `append`ed to), created for its owner alone."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    return os.fdopen(descriptor, "ab" if append else "wb")
