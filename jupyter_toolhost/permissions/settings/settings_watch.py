"""Noticing that a settings file changed on disk while a session runs.

A session reads its settings files once, when it starts. A change made to them afterwards —
by a person in an editor, or by a command a person approved — is never applied silently to
the running session: not a widening (a new allow rule, a laxer mode) and not a narrowing
either, so what the session may do never shifts under the person who watches it. Instead
the next prompt is preceded by a notice naming the file and saying how to apply it (a new
session: ``%agent reset`` in a notebook, a new `Session` in Python). Rules added with
``%agent allow|ask|deny`` or the approval buttons apply at once; they are not file changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

_Stamp = tuple[int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


class SettingsWatch:
    """Remembers each settings file's state at session start; reports each change once."""

    def __init__(self, files: Iterable[Path]) -> None:
        self._stamps = {Path(f): _stamp(Path(f)) for f in files}

    def changes(self) -> list[str]:
        """Messages for files that changed since the start or the last report."""
        messages: list[str] = []
        for path, before in self._stamps.items():
            now = _stamp(path)
            if now == before:
                continue
            self._stamps[path] = now
            what = (
                "was created" if before is None else "was removed" if now is None else ("changed")
            )
            messages.append(
                f"The settings file {path} {what} on disk after this session started. "
                "The change is not applied to the running session (its rules and mode stay "
                "as they were); start a new session to apply it (%agent reset in a notebook)."
            )
        return messages
