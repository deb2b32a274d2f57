"""Text files as the file tools see them: encoding and line endings kept, atomic writes.

Read, Edit, Write and NotebookEdit share these helpers so that a file keeps its encoding
(UTF-8, UTF-8 with BOM, or Latin-1 for anything that is not UTF-8) and its line endings
(CRLF stays CRLF) through an edit, and so that every write replaces the file in one step
(a temp file in the same directory, then `os.replace`) with its permissions kept.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from ..core.context import ToolUseContext
from ..core.types import ToolInputError
from ._opened import checked_folder, open_checked

Newline: TypeAlias = Literal["\n", "\r\n"]

SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file: its text with `\\n` line endings and how to write it back."""

    text: str
    encoding: str
    newline: Newline


def detect_encoding(data: bytes, *, complete: bool = True) -> str:
    """`utf-8-sig` for a BOM, `utf-8` when the bytes decode as UTF-8, else `latin-1`.

    With `complete=False` (a sample from the start of a file) a multi-byte character cut
    off at the end of the sample does not count against UTF-8.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut_off = exc.reason == "unexpected end of data" and exc.start >= len(data) - 3
        if complete or not cut_off:
            return "latin-1"
    return "utf-8"


def looks_binary(sample: bytes) -> bool:
    """A NUL byte in the first block: how git and ripgrep tell binary from text."""
    return b"\0" in sample[:SNIFF_BYTES]


def read_text_file(path: Path, context: ToolUseContext | None = None) -> TextFile:
    """Decode a whole text file; raises `ToolInputError` for a binary one. With `context`,
    the file opened is checked against the Read denies (`_opened.open_checked`)."""
    if context is None:
        data = path.read_bytes()
    else:
        with open_checked(context, path) as fd, open(os.dup(fd), "rb") as handle:
            data = handle.read()
    if looks_binary(data):
        raise ToolInputError(f"{path} is a binary file; it cannot be edited as text.")
    encoding = detect_encoding(data)
    text = data.decode(encoding)
    newline: Newline = "\r\n" if "\r\n" in text else "\n"
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    return TextFile(text=text, encoding=encoding, newline=newline)


def write_text_atomic(
    path: Path,
    text: str,
    *,
    encoding: str = "utf-8",
    newline: Newline = "\n",
    context: ToolUseContext | None = None,
) -> None:
    """Replace `path` with `text` in one step, keeping the old file's permission bits."""
    data = (text.replace("\n", "\r\n") if newline == "\r\n" else text).encode(encoding)
    write_bytes_atomic(path, data, context=context)


def write_bytes_atomic(path: Path, data: bytes, *, context: ToolUseContext | None = None) -> None:
    """Write `data` to a temp file beside `path` and rename it over `path`. With `context`,
    both happen inside the folder as opened and checked against the Edit denies."""
    if context is not None:
        with checked_folder(context, path) as folder:
            _write_in(folder, path.name, data)
        return
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_in(folder: int, name: str, data: bytes) -> None:
    """`write_bytes_atomic` relative to the descriptor of a folder."""
    try:
        mode: int | None = stat.S_IMODE(os.stat(name, dir_fd=folder).st_mode)
    except FileNotFoundError:
        mode = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def require_regular_file(path: Path) -> None:
    """Raise a clear `ToolInputError` unless `path` is an existing regular file (one in a
    folder this user may not enter, such as another user's, is refused as such)."""
    try:
        if path.is_dir():
            raise ToolInputError(f"{path} is a directory, not a file.")
        if not path.exists():
            raise ToolInputError(f"File does not exist: {path}")
        if not path.is_file():
            raise ToolInputError(f"{path} is not a regular file.")
    except PermissionError:
        raise ToolInputError(
            f"Permission denied: cannot read {path} (a folder on its way is closed to this user)"
        ) from None


def require_fresh_read(context: ToolUseContext, path: Path, *, verb: str = "edit") -> None:
    """Refuse to change a file that was not Read in this session or changed since."""
    changed = context.read_file_state.changed_since_read(path)
    if changed is None:
        raise ToolInputError(
            f"File has not been read yet. Read {path} first before trying to {verb} it."
        )
    if changed:
        raise ToolInputError(
            f"{path} has been modified since it was read (by the user or another program). "
            f"Read it again before trying to {verb} it."
        )


def require_writable_parent(path: Path) -> None:
    """Raise a clear error when the file's directory cannot be written to."""
    parent = path.parent
    if not parent.exists():
        return
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ToolInputError(f"Permission denied: cannot write in {parent}")
    if path.exists() and not os.access(path, os.W_OK):
        raise ToolInputError(f"Permission denied: {path} is not writable")


def diff_snippet(path: Path, old: str, new: str, *, max_lines: int = 40) -> str:
    """A short unified diff of a change, for the model to check what it did."""
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), str(path), str(path), n=2, lineterm=""
        )
    )[2:]
    if len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = [*lines[:max_lines], f"... ({hidden} more diff lines)"]
    return "\n".join(lines)
