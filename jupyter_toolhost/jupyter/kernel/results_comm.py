"""Saved tool results, read through the kernel for the lab extension's "Open full output".

Results are saved under `.toolhost/` (a dot-folder, which a stock Jupyter server hides) on the
kernel's disk (which, with a remote kernel, is not the server's). So the lab extension asks
the kernel: it opens a comm on the target `jupyter_toolhost.results` with
`{"path": ..., "offset": 0, "limit": 4_000_000, "encoding": "base64"}`, and the kernel
answers and closes the comm:

- `{"ok": true, "path", "shown_path", "name", "size", "offset", "next_offset",
  "encoding": "base64", "pieces": N}` (`shown_path` is how a person reads the path: relative
  to the working folder or `~`, never the machine's absolute path), where `size` is the
  file's size in bytes and `next_offset` is where the next chunk starts (None at the end),
  then N messages `{"piece": i, "data": "<base64>"}`
  holding the chunk's bytes in order (each at most `PIECE_BYTES` before encoding);
- `{"ok": false, "error": "..."}` for anything else.

Why pieces, and base64: every message must stay well under the 10 MiB a websocket frame may
hold between Jupyter Server and a Kernel Gateway (tornado's default), or the gateway link
drops it and the answer never arrives. Text in JSON grows unpredictably (a control byte
becomes six), base64 by exactly 4/3: a piece is at most 1.4 MB on the wire. The first
message says how many pieces follow, so a front end that got it and not the rest knows the
connection lost them, rather than that the kernel was silent. A request without
`"encoding"` (an older front end) gets one message with `"text"`, at most
`TEXT_CHUNK_BYTES` long, which even at six bytes per byte stays under the frame limit.

`{"list": true}` instead asks for the saved results of every session under this kernel's
home, newest first: `{"ok": true, "results": [{"path", "shown_path", "name", "session",
"size", "modified"}, ...]}` (at most `LIST_LIMIT`), for "Agent: open session folder" where the
server hides the folder itself.

Only files inside a `tool-results/` folder of a session under this kernel's `.toolhost/`
home (or `JUPYTER_TOOLHOST_HOME`) are served, after resolving symlinks: the comm is no way to
read other files of the machine. Registering the target costs nothing at `%load_ext`.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from ...core.context import toolhost_home
from ..views.render import shown_path

TARGET = "jupyter_toolhost.results"
CHUNK_BYTES = 4_000_000
"""The most one answer carries; the viewer asks for the next chunk with `next_offset`."""
PIECE_BYTES = 1_000_000
"""The most bytes one message carries (1,333,336 characters of base64)."""
TEXT_CHUNK_BYTES = 1_000_000
"""The most bytes a plain-text answer carries (at most 6 MB as JSON)."""
LIST_LIMIT = 500


def register(shell: Any) -> bool:
    """Serve saved results on the kernel's comm manager; False without a kernel."""
    manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
    if manager is None:
        return False
    manager.register_target(TARGET, _on_open)
    return True


def _on_open(comm: Any, message: dict[str, Any]) -> None:
    data = message.get("content", {}).get("data") or {}
    for part in answer_messages(data):
        comm.send(part)
    comm.close()


def answer_messages(request: Any, *, cwd: str | None = None) -> list[dict[str, Any]]:
    """The messages that answer one request, in order (see the module docstring)."""
    answer = read_result(request, cwd=cwd)
    raw = answer.pop("raw", None)
    base64_asked = isinstance(request, dict) and request.get("encoding") == "base64"
    if not isinstance(raw, bytes) or not base64_asked:
        return [answer]
    del answer["text"]
    pieces = [raw[at : at + PIECE_BYTES] for at in range(0, len(raw), PIECE_BYTES)] or [b""]
    header = {**answer, "encoding": "base64", "pieces": len(pieces)}
    return [
        header,
        *(
            {"piece": index, "data": base64.b64encode(piece).decode("ascii")}
            for index, piece in enumerate(pieces)
        ),
    ]


def read_result(request: Any, *, cwd: str | None = None) -> dict[str, Any]:
    """The answer to one request as one message with `text` (and the chunk's bytes under
    `raw`, which `answer_messages` sends as base64 pieces); never raises."""
    if isinstance(request, dict) and request.get("list") is True:
        return list_results(cwd=cwd)
    if not isinstance(request, dict) or not isinstance(request.get("path"), str):
        return {"ok": False, "error": "The request names no saved result (a 'path' is needed)."}
    cap = CHUNK_BYTES if request.get("encoding") == "base64" else TEXT_CHUNK_BYTES
    offset, limit = request.get("offset", 0), request.get("limit", cap)
    if not isinstance(offset, int) or offset < 0:
        offset = 0
    if not isinstance(limit, int) or not 0 < limit <= cap:
        limit = cap
    base = cwd or os.getcwd()
    shown: str = request["path"]
    try:
        real = saved_result(shown, cwd=base)
    except ValueError as exc:
        return {"ok": False, "error": str(exc)}
    try:
        size = real.stat().st_size
        with real.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read(limit)
    except OSError as exc:
        return {"ok": False, "error": f"{shown} could not be read: {exc.strerror or exc}."}
    chunk = _whole_characters(chunk, at_end=offset + len(chunk) >= size)
    end = offset + len(chunk)
    return {
        "ok": True,
        "path": shown,
        "shown_path": shown_path(str(real), base),
        "name": real.name,
        "text": chunk.decode("utf-8", errors="replace"),
        "raw": chunk,
        "size": size,
        "offset": offset,
        "next_offset": end if end < size else None,
    }


def saved_result(path: str, *, cwd: str | None = None) -> Path:
    """The file a saved result's `path` (absolute, or relative to `cwd`) names, resolved;
    `ValueError` with the message to show when it is gone or is not a saved result."""
    base = cwd or os.getcwd()
    given = Path(path) if os.path.isabs(path) else Path(base) / path
    try:
        real = given.resolve(strict=True)
    except PermissionError:  # a folder on the way is closed to this user: another user's
        raise ValueError(f"{path} is not a saved tool result of this kernel's sessions.") from None
    except (OSError, RuntimeError):
        raise ValueError(f"{path} is gone: the saved result no longer exists.") from None
    if not _is_saved_result(real, base):
        raise ValueError(f"{path} is not a saved tool result of this kernel's sessions.")
    return real


def list_results(*, cwd: str | None = None) -> dict[str, Any]:
    """The saved results of this kernel's sessions, newest first (see the module docstring)."""

    base = cwd or os.getcwd()
    sessions = toolhost_home(base) / "sessions"
    found = []
    for path in sessions.glob("*/tool-results/*"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.is_file() and _is_saved_result(path.resolve(), base):
            found.append((stat.st_mtime, path, stat.st_size))
    found.sort(key=lambda item: item[0], reverse=True)
    return {
        "ok": True,
        "results": [
            {
                "path": str(path),
                "shown_path": shown_path(str(path), base),
                "name": path.name,
                "session": path.parent.parent.name,
                "size": size,
                "modified": modified,
            }
            for modified, path, size in found[:LIST_LIMIT]
        ],
    }


def _is_saved_result(real: Path, cwd: str) -> bool:

    sessions = (toolhost_home(cwd) / "sessions").resolve()
    try:
        parts = real.relative_to(sessions).parts
    except ValueError:
        return False
    # <session>/tool-results/<file>, or a sub-agent's <session>/.../tool-results/<file>
    return len(parts) >= 3 and parts[-2] == "tool-results" and real.is_file()


def _whole_characters(chunk: bytes, *, at_end: bool) -> bytes:
    """Cut a chunk back to a UTF-8 character boundary (unless the file ends there), so a
    character split between two chunks is sent whole in the next one."""
    if at_end or not chunk:
        return chunk
    cut = len(chunk)
    while cut > 0 and len(chunk) - cut < 4 and chunk[cut - 1] & 0xC0 == 0x80:
        cut -= 1
    if cut > 0 and chunk[cut - 1] >= 0xC0:  # a lead byte whose continuation is missing
        return chunk[: cut - 1]
    return chunk
