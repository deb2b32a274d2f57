"""Checkpoints of the files a prompt's calls change, and undoing them.

Before a call of a tool that declares it writes a path (`get_path` set and the call not
read-only, the same flags the permission rules read) first changes a file during a prompt
(a ``%%agent`` cell), the file's prior state is kept: its bytes, a symbolic link's target, or
that it did not exist. After the call, the state it left is noted, so an undo can tell
whether the file changed since the agent wrote it.

What is kept, and where: ``.toolhost/sessions/<session>/checkpoints/`` (``index.json`` and one
file per kept copy), beside the session's saved results. A session's checkpoints stay on disk
after the kernel stops; ``%agent resume <session>`` picks them up again (a new conversation
that reuses an id, as a replayed cassette does, starts with none). A session may keep
up to `limit_bytes` of copies (``JUPYTER_TOOLHOST_CHECKPOINT_LIMIT``, bytes; default 50 MB);
a file that does not fit is not checkpointed and a note says so.

An undo (`plan_undo`, then `undo`) restores each file in the folder the tool wrote it in,
never through a link planted since: the folder must still resolve to itself, and the file's
name is replaced in it (a link there is replaced, not followed). A file that changed since
the agent wrote it (edited, deleted, made a link), or that lies in a protected folder, is
restored only when forced. A folder now standing in a file's place is never removed. The
state an undo replaces is itself kept as a checkpoint, so an undo can be undone.

The tools that write through a shell (Bash) are not checkpointed: what a command changes is
not known exactly before it runs.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ..core.context import ToolUseContext
from ..core.private import private_folder, private_opener
from ..core.results import human_size
from ..core.tool import Tool
from ..permissions.guards import PROTECTED_DIRS

LIMIT_ENV = "JUPYTER_TOOLHOST_CHECKPOINT_LIMIT"
DEFAULT_LIMIT_BYTES = 50_000_000
"""How many bytes of kept copies a session's checkpoints may hold by default."""
DIFF_LINES = 200
"""The most diff lines one file shows before an undo."""

Kind = Literal["file", "link", "absent", "directory", "other"]


@dataclass
class FileState:
    """One file's state: its kind and, for a file or link, a digest of what it holds."""

    kind: Kind
    digest: str = ""
    blob: str = ""
    """The name of the kept copy under the checkpoints folder ("" when none is kept)."""
    size: int = 0
    mode: int = 0o644


@dataclass
class FileRecord:
    """A file a checkpoint holds: where the tool wrote it, before and after."""

    folder: str
    """The folder the file was written in, resolved when it was first written."""
    name: str
    shown: str
    """The path as the call named it (what people see)."""
    before: FileState
    after: FileState | None = None

    @property
    def path(self) -> str:
        return os.path.join(self.folder, self.name)


@dataclass
class Checkpoint:
    """The files one prompt (or one undo) changed, as they were before it."""

    number: int
    label: str
    started: float
    files: list[FileRecord] = field(default_factory=list[FileRecord])
    skipped: list[str] = field(default_factory=list[str])
    """Why a file was not checkpointed (over the size limit, unreadable)."""
    undoes: int | None = None
    """For the checkpoint an undo made: the number of the checkpoint it undid."""
    undone_by: int | None = None
    """The checkpoint made when this one was undone."""


@dataclass
class FilePlan:
    """What undoing one file does."""

    record: FileRecord
    diff: str
    changed: str | None
    """Why a second confirmation is needed (changed since, protected folder); None: clean."""
    blocked: str | None
    """Why it can't be restored at all; None: it can."""


@dataclass
class UndoPlan:
    checkpoint: Checkpoint
    files: list[FilePlan]

    @property
    def needs_force(self) -> bool:
        return any(f.changed and not f.blocked for f in self.files)


def writes_path(tool: Tool[Any], parsed: Any, context: ToolUseContext) -> Path | None:
    """The file a call will write, from the tool's declared flags; None when it writes none
    the flags name (a read-only call, a tool without `get_path`, a predicate that fails)."""
    if tool.get_path is None or tool.flag(tool.is_read_only, parsed):
        return None
    try:
        named = tool.get_path(parsed)
    except Exception:
        return None
    return context.resolve_path(named) if named else None


def limit_from_environment() -> int:
    """The size limit `LIMIT_ENV` sets (bytes), else the default."""
    raw = os.environ.get(LIMIT_ENV, "").strip().replace("_", "")
    try:
        return max(0, int(raw)) if raw else DEFAULT_LIMIT_BYTES
    except ValueError:
        return DEFAULT_LIMIT_BYTES


class CheckpointStore:
    """A session's checkpoints: one per prompt that changed files, one per undo."""

    def __init__(
        self, directory: Path, *, limit_bytes: int | None = None, resume: bool = False
    ) -> None:
        self.directory = directory
        self.limit_bytes = limit_from_environment() if limit_bytes is None else limit_bytes
        self.checkpoints: list[Checkpoint] = []
        self.current: Checkpoint | None = None
        self.notices: list[str] = []
        """What the person is told at the end of the prompt (a file not checkpointed)."""
        self._model_notes: list[str] = []
        if resume:
            self.load()
        else:
            self._set_aside()

    # ── recording ──────────────────────────────────────────────────────────────────────

    def begin(self, label: str) -> None:
        """Start the checkpoint of a new prompt (kept only once it holds a file)."""
        first = label.strip().splitlines()[0] if label.strip() else ""
        self.current = Checkpoint(self._next_number(), first[:80], time.time())

    def capture(self, path: Path, shown: str) -> None:
        """Keep `path`'s state before its first change in the current prompt; a failure to
        keep it becomes a notice, never the call's failure."""
        try:
            self._capture(path, shown)
        except OSError as exc:
            self.notices.append(f"{shown}: not checkpointed ({_why(exc)})")

    def _capture(self, path: Path, shown: str) -> None:
        checkpoint = self.current
        if checkpoint is None:
            self.begin("")
            checkpoint = self.current
        assert checkpoint is not None
        folder, name = _placed(path)
        if any(r.folder == folder and r.name == name for r in checkpoint.files):
            return
        if any(s.startswith(f"{shown}:") for s in checkpoint.skipped):
            return
        try:
            size = os.lstat(os.path.join(folder, name)).st_size
        except OSError:
            size = 0
        if size and self.used_bytes() + size > self.limit_bytes:
            reason = (
                f"{shown}: not checkpointed ({human_size(size)} would pass the "
                f"{human_size(self.limit_bytes)} limit, {LIMIT_ENV}); undo can't restore it"
            )
            checkpoint.skipped.append(reason)
            self.notices.append(reason)
            self._save_index(checkpoint)
            return
        try:
            before = self._keep(folder, name)
        except OSError as exc:
            reason = f"{shown}: not checkpointed (could not read it: {exc.strerror or exc})"
            checkpoint.skipped.append(reason)
            self.notices.append(reason)
            self._save_index(checkpoint)
            return
        checkpoint.files.append(FileRecord(folder, name, shown, before))
        self._save_index(checkpoint)

    def settle(self, path: Path) -> None:
        """Note the state a call left `path` in (after it, whether it succeeded or not)."""
        if self.current is None:
            return
        folder, name = _placed(path)
        for record in list(self.current.files):
            if record.folder == folder and record.name == name:
                record.after = _state(folder, name)
                after, before = record.after, record.before
                if (after.kind, after.digest) == (before.kind, before.digest):
                    self._forget(record)  # the call changed nothing (it failed, or wrote the same)
                with contextlib.suppress(OSError):
                    self._save_index(self.current)

    def _forget(self, record: FileRecord) -> None:
        assert self.current is not None
        self.current.files.remove(record)
        if record.before.blob:
            with contextlib.suppress(OSError):
                (self.directory / "files" / record.before.blob).unlink()

    def take_notices(self) -> list[str]:
        """What to tell the person about the prompt that just ended (then forgotten)."""
        notices, self.notices = self.notices, []
        return notices

    def take_model_note(self) -> str | None:
        """What was undone since the model last heard, as a note for its next prompt."""
        if not self._model_notes:
            return None
        notes, self._model_notes = self._model_notes, []
        return "\n".join(notes)

    # ── reading ────────────────────────────────────────────────────────────────────────

    def get(self, number: int | None) -> Checkpoint | None:
        """Checkpoint `number`; None: the newest prompt's checkpoint not yet undone."""
        if number is not None:
            return next((c for c in self.checkpoints if c.number == number), None)
        for checkpoint in reversed(self.checkpoints):
            if checkpoint.undoes is None and checkpoint.undone_by is None and checkpoint.files:
                return checkpoint
        return None

    def used_bytes(self) -> int:
        """The bytes the copies a prompt kept take (an undo's own copies do not count)."""
        return sum(
            r.before.size
            for c in self.checkpoints
            if c.undoes is None
            for r in c.files
            if r.before.blob
        )

    def plan_undo(self, checkpoint: Checkpoint) -> UndoPlan:
        """What undoing `checkpoint` would do to each of its files, with their diffs."""
        return UndoPlan(checkpoint, [self._plan_file(r) for r in checkpoint.files])

    # ── undoing ────────────────────────────────────────────────────────────────────────

    def undo(self, plan: UndoPlan, *, force: bool) -> tuple[Checkpoint, list[str]]:
        """Restore the files of `plan` (changed ones only when `force`); the states replaced
        are kept as a new checkpoint. Returns it and one line per file."""
        undo = Checkpoint(
            self._next_number(),
            f"undo of checkpoint {plan.checkpoint.number}",
            time.time(),
            undoes=plan.checkpoint.number,
        )
        lines: list[str] = []
        for item in plan.files:
            record = item.record
            if item.blocked:
                lines.append(f"{record.shown}: not restored ({item.blocked})")
                continue
            if item.changed and not force:
                lines.append(f"{record.shown}: not restored ({item.changed})")
                continue
            try:
                replaced = self._keep(record.folder, record.name, unlimited=True)
                self._restore(record)
            except (OSError, ValueError) as exc:
                lines.append(f"{record.shown}: not restored ({_why(exc)})")
                continue
            undo.files.append(
                FileRecord(
                    record.folder,
                    record.name,
                    record.shown,
                    replaced,
                    _state(record.folder, record.name),
                )
            )
            lines.append(f"{record.shown}: restored ({_describe(record.before)})")
        if undo.files:
            plan.checkpoint.undone_by = undo.number
            self.checkpoints.append(undo)
            self._write_index()
            restored = ", ".join(r.shown for r in undo.files)
            self._model_notes.append(
                f"The person undid checkpoint {plan.checkpoint.number} "
                f"({plan.checkpoint.label!r}): {restored} are back as they were before it. "
                "Read a file again before you change it."
            )
        return undo, lines

    # ── internals ──────────────────────────────────────────────────────────────────────

    def _next_number(self) -> int:
        numbers = [c.number for c in self.checkpoints]
        if self.current is not None:
            numbers.append(self.current.number)
        return max(numbers, default=0) + 1

    def _keep(self, folder: str, name: str, *, unlimited: bool = False) -> FileState:
        state = _state(folder, name)
        path = os.path.join(folder, name)
        if state.kind == "file":
            data = _read_nofollow(path)
            state.blob = self._write_blob(data)
        elif state.kind == "link":
            state.blob = self._write_blob(os.readlink(path).encode())
        del unlimited  # an undo keeps what it replaces whatever the limit: nothing is lost
        return state

    def _write_blob(self, data: bytes) -> str:
        blobs = self.directory / "files"
        private_folder(blobs)
        name = f"{hashlib.sha256(data).hexdigest()[:16]}-{secrets.token_hex(4)}"
        with open(blobs / name, "wb", opener=private_opener) as blob:
            blob.write(data)
        return name

    def _blob(self, state: FileState) -> bytes:
        data = (self.directory / "files" / state.blob).read_bytes()
        if hashlib.sha256(data).hexdigest() != state.digest:
            raise ValueError("its kept copy was changed on disk")
        return data

    def _plan_file(self, record: FileRecord) -> FilePlan:
        now = _state(record.folder, record.name)
        blocked = _folder_moved(record.folder)
        if blocked is None and now.kind == "directory":
            blocked = "a folder stands in its place now; move it away first"
        if blocked is None and record.before.kind in ("file", "link"):
            try:
                self._blob(record.before)
            except (OSError, ValueError) as exc:
                blocked = _why(exc)
        changed = None
        after = record.after
        if after is None or (now.kind, now.digest) != (after.kind, after.digest):
            changed = f"changed since the agent wrote it: {_describe(now)} now"
        if _in_protected(record.path):
            changed = f"{changed + '; ' if changed else ''}it is in a protected folder"
        return FilePlan(record, "" if blocked else self._diff(record, now), changed, blocked)

    def _diff(self, record: FileRecord, now: FileState) -> str:
        old = self._text(record.before)
        new = self._text(now, current=record.path)
        if old is None or new is None:
            return f"{record.shown}: {_describe(now)} -> {_describe(record.before)}"
        lines = list(
            difflib.unified_diff(
                new.splitlines(),
                old.splitlines(),
                f"{record.shown} (now)",
                f"{record.shown} (restored)",
                lineterm="",
            )
        )
        if len(lines) > DIFF_LINES:
            lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more diff lines)"]
        return "\n".join(lines) or f"{record.shown}: no change in content"

    def _text(self, state: FileState, *, current: str | None = None) -> str | None:
        if state.kind == "absent":
            return ""
        if state.kind != "file":
            return None
        try:
            data = _read_nofollow(current) if current else self._blob(state)
            return data.decode("utf-8")
        except (OSError, ValueError):
            return None

    def _restore(self, record: FileRecord) -> None:
        before = record.before
        fd = os.open(record.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if os.path.realpath(f"/proc/self/fd/{fd}") != record.folder:
                raise ValueError("its folder was moved or replaced by a link")
            if before.kind == "absent":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(record.name, dir_fd=fd)
                return
            tmp = f".{record.name}.{secrets.token_hex(6)}.undo"
            if before.kind == "link":
                os.symlink(self._blob(before).decode(), tmp, dir_fd=fd)
            else:
                data = self._blob(before)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                out = os.open(tmp, flags, 0o600, dir_fd=fd)
                with os.fdopen(out, "wb") as handle:
                    handle.write(data)
                    os.fchmod(handle.fileno(), before.mode)
            try:
                os.replace(tmp, record.name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
        finally:
            os.close(fd)

    def _save_index(self, checkpoint: Checkpoint) -> None:
        if checkpoint not in self.checkpoints:
            self.checkpoints.append(checkpoint)
        self._write_index()

    def _write_index(self) -> None:
        private_folder(self.directory)
        data = [asdict(c) for c in self.checkpoints]
        tmp = self.directory / f".index.{secrets.token_hex(4)}.tmp"
        with open(tmp, "w", encoding="utf-8", opener=private_opener) as index:
            index.write(json.dumps(data, indent=1))
        os.replace(tmp, self.directory / "index.json")

    def _set_aside(self) -> None:
        """A new conversation under a session id used before (a cassette replayed again)
        starts with no checkpoints; the old index is kept beside, renamed."""
        index = self.directory / "index.json"
        if index.exists():
            with contextlib.suppress(OSError):
                os.replace(index, self.directory / f"index-{time.time_ns()}.json")

    def load(self) -> None:
        """Take up the checkpoints saved last under this directory (a resumed session: its
        index was set aside when the session object was made)."""
        saved = sorted(self.directory.glob("index-*.json"), key=lambda p: int(p.stem[6:] or 0))
        current = self.directory / "index.json"
        newest = current if current.exists() else (saved[-1] if saved else None)
        if newest is None:
            return
        try:
            data = json.loads(newest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        items: list[Any] = cast(list[Any], data) if isinstance(data, list) else []
        for item in items:
            with contextlib.suppress(TypeError, KeyError, AttributeError):
                self.checkpoints.append(_checkpoint_from(item))
        if self.checkpoints:
            with contextlib.suppress(OSError):
                self._write_index()


def _placed(path: Path) -> tuple[str, str]:
    """The folder a file tool writes `path` in (resolved, as the tool opens it) and its name."""
    absolute = os.path.abspath(path)
    return os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute)


def _state(folder: str, name: str) -> FileState:
    path = os.path.join(folder, name)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return FileState("absent")
    except OSError:
        return FileState("other")
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path).encode()
        return FileState("link", hashlib.sha256(target).hexdigest(), size=len(target))
    if stat.S_ISDIR(info.st_mode):
        return FileState("directory")
    if not stat.S_ISREG(info.st_mode):
        return FileState("other")
    digest = hashlib.sha256(_read_nofollow(path)).hexdigest()
    return FileState("file", digest, size=info.st_size, mode=stat.S_IMODE(info.st_mode))


def _read_nofollow(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _folder_moved(folder: str) -> str | None:
    if not os.path.isdir(folder):
        return "its folder is gone"
    if os.path.realpath(folder) != folder:
        return "its folder was replaced by a link since; restore it by hand"
    return None


def _in_protected(path: str) -> bool:
    parts = {p.casefold() for p in Path(path).parts[:-1]}
    return any(d in parts for d in PROTECTED_DIRS)


def _describe(state: FileState) -> str:
    match state.kind:
        case "absent":
            return "absent"
        case "file":
            return f"a file of {human_size(state.size)}"
        case "link":
            return "a symbolic link"
        case "directory":
            return "a folder"
        case "other":
            return "not a regular file"


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _checkpoint_from(item: dict[str, Any]) -> Checkpoint:
    files = [
        FileRecord(
            f["folder"],
            f["name"],
            f["shown"],
            FileState(**f["before"]),
            FileState(**f["after"]) if f.get("after") else None,
        )
        for f in item["files"]
    ]
    return Checkpoint(
        item["number"],
        item["label"],
        item["started"],
        files,
        list(item.get("skipped", [])),
        item.get("undoes"),
        item.get("undone_by"),
    )


def undo_summary(lines: Sequence[str]) -> str:
    """The lines an undo reports, as one text."""
    return "\n".join(lines) if lines else "Nothing was restored."
