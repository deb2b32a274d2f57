"""The session transcript: one JSON record per line, appended as the conversation grows.

`.toolhost/sessions/<session>/transcript.jsonl` holds `message` records (each message or
part of a message as it was committed), `usage` records (one per model response) and
`compact_boundary` records (which carry the conversation as it stood after compaction).
`load_transcript` reads it back into a valid conversation, so a session can be resumed
after a kernel restart, even one that died in the middle of a tool call.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.conversation import Message, add_assistant, add_user, blocks_of, repair
from ..core.json_values import json_array, json_mapping, json_object
from ..core.private import FILE_MODE, private_folder
from ..core.results import describe_error
from ..model.base import Usage
from ..model.thinking import drop_settled_thinking

_log = logging.getLogger(__name__)


class Transcript:
    """Appends records to one session's `transcript.jsonl`.

    Writing never raises: when a record cannot be written (disk full, an unwritable
    folder), `on_error` hears about it once per distinct failure, and the conversation in
    memory goes on without that line."""

    def __init__(self, path: Path, *, on_error: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.on_error: Callable[[str], None] | None = on_error
        self.failures = 0
        """Records that could not be written."""
        self._last_failure: str | None = None

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as a line, appended with one `write` to the end of the file (a
        crash loses at most that line; nothing already written is ever rewritten)."""
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        try:
            try:
                self._write(line)
            except FileNotFoundError:  # the first record, or its folder was removed
                private_folder(self.path.parent)
                self._write(line)
        except OSError as exc:
            self.failures += 1
            text = f"The transcript could not be written to {self.path}: {describe_error(exc)}"
            _log.warning("%s", text)
            if text != self._last_failure and self.on_error is not None:
                self.on_error(f"{text}. The conversation goes on; it will not be resumable.")
            self._last_failure = text
            return
        self._last_failure = None

    def _write(self, line: str) -> None:
        # os-level append: no buffered text file built and torn down for each line.
        data = line.encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        descriptor = os.open(self.path, flags, FILE_MODE)
        try:
            while data:
                data = data[os.write(descriptor, data) :]
        finally:
            os.close(descriptor)

    def message(self, role: str, content: list[dict[str, Any]]) -> None:
        self.append({"type": "message", "message": {"role": role, "content": content}})

    def usage(self, model: str, usage: Usage) -> None:
        self.append({"type": "usage", "model": model, "usage": usage.to_dict()})


@dataclass
class LoadedTranscript:
    """What a transcript holds: the conversation, compaction records and usage."""

    messages: list[Message] = field(default_factory=list[Message])
    compact_boundaries: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    usage: list[tuple[str, Usage]] = field(default_factory=list[tuple[str, Usage]])


def load_transcript(path: Path) -> LoadedTranscript:
    """Read a transcript back; unreadable lines are skipped with a warning."""
    loaded = LoadedTranscript()
    messages: list[Message] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json_object(json.loads(line))
        except ValueError:
            _log.warning("%s:%d is not JSON; skipped", path, number)
            continue
        if record is None:
            continue  # a line that is not an object is no record
        kind = record.get("type")
        if kind == "message":
            message = json_object(record.get("message")) or {}
            add = add_user if message.get("role") == "user" else add_assistant
            add(messages, blocks_of(message))
        elif kind == "compact_boundary":
            loaded.compact_boundaries.append(record)
            kept = json_array(record.get("messages", [])) or []
            messages = [dict(m) for m in map(json_mapping, kept) if m is not None]
        elif kind == "usage":
            usage = json_mapping(record["usage"])
            loaded.usage.append((str(record.get("model", "")), Usage.from_dict(usage)))
    # Thinking blocks of settled turns are not needed to go on (an open chain keeps its own).
    loaded.messages = drop_settled_thinking(repair(messages))
    return loaded
