"""Check the file a tool actually opened, not only the name the permission check saw.

The check runs before the call, on the path's name and its resolved target; a link swapped
between the check and the open would otherwise hand the tool another file. So the file
tools open first and check after: `open_checked` opens the file (following links, as the
check did), asks the kernel which file the descriptor holds (``/proc/self/fd``; elsewhere
the resolved path, confirmed by device and inode), and refuses it when a Read deny protects
that file. Everything the tool then reads comes from that descriptor (or from
``/proc/self/fd/N``, which reopens the same file). Writes go through a descriptor of the
folder (`checked_folder`), checked the same way against Edit denies, and are renamed into
place within it, so a folder link swapped after the check cannot redirect them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.context import ToolUseContext
from ..core.types import ToolError
from ..permissions.engine import edit_denied, read_denied

_CHANGED = (
    "{path} was not {verb}: the file it leads to changed after permission was checked (its "
    "symlink resolution now reaches a path a deny rule protects)"
)


def fd_path(fd: int, fallback: Path) -> str:
    """The absolute path of the file `fd` holds open."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(fallback)
        held, named = os.fstat(fd), os.stat(real)
        if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
            raise ToolError(_CHANGED.format(path=fallback, verb="opened")) from None
        return real


@contextmanager
def open_checked(context: ToolUseContext, path: Path, *, verb: str = "read") -> Iterator[int]:
    """A read-only descriptor of `path`, refused when the opened file is read-denied."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        _refuse(read_denied(context), fd_path(fd, path), path, verb)
        yield fd
    finally:
        os.close(fd)


def reopened(fd: int) -> Path:
    """A path that opens the very file `fd` holds (Linux's ``/proc/self/fd/N``)."""
    proc = Path(f"/proc/self/fd/{fd}")
    return proc if proc.exists() else Path(os.readlink(proc))


@contextmanager
def checked_folder(context: ToolUseContext, path: Path) -> Iterator[int]:
    """A descriptor of `path`'s folder, refused when `path` in the opened folder is
    edit-denied (the folder's own link may have been swapped since the check)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path.parent, flags)
    try:
        folder = fd_path(fd, path.parent)
        _refuse(edit_denied(context), os.path.join(folder, path.name), path, "written")
        yield fd
    finally:
        os.close(fd)


def _refuse(denied: Callable[[str], bool], actual: str, path: Path, verb: str) -> None:
    if denied(actual):
        raise ToolError(_CHANGED.format(path=path, verb=verb))
