"""What a sandboxed command left for the next kernel start: moved aside, never run.

The sandbox makes the existing start-up files read-only (`sandbox`), but a mount can only
cover a path that exists: a program the command check can't see into (``python gen.py``,
``pip install -e .``) may still *create* ``ipykernel_launcher.py`` in the notebook's folder,
a package named like a module a kernel start imports, or a ``*.pth`` file whose ``import``
line ``site`` runs. The next kernel, started outside the sandbox, would run it.

So the start-up paths are listed before the command runs (`watch`) and again when it
ends (`sweep`); each new one is moved into the session's ``quarantine/`` folder (nothing is
deleted) and the result says where it went. What stays: a folder that is not a package
(``code/`` with no ``__init__``), a ``.pth`` file that only lists folders (``site`` appends
them to the path, after every installed module), and compiled ``__pycache__`` files.
A background command is swept when the next command ends.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ...core.context import ToolUseContext
from ...permissions.startup import StartupPlaces, existing_startup_paths

QUARANTINE = "quarantine"
"""The session folder's sub-folder that holds what a sweep moved."""


@dataclass(frozen=True, slots=True)
class StartupWatch:
    """The start-up places of one command and what existed there before it ran."""

    places: StartupPlaces
    before: frozenset[str]


def watch(places: StartupPlaces) -> StartupWatch:
    """List what exists now, to compare with when the command ends."""
    return StartupWatch(places, frozenset(existing_startup_paths(places)))


def sweep(context: ToolUseContext, seen: StartupWatch) -> str | None:
    """Move each start-up file the command made into the quarantine; a note saying so, or
    None when it made none."""
    fresh = [p for p in existing_startup_paths(seen.places) if p not in seen.before]
    fresh = [p for p in fresh if _runs_at_start(p, seen.places)]
    if not fresh:
        return None
    folder = context.session_dir() / QUARANTINE
    moved: list[str] = []
    for path in fresh:
        target = folder / uuid.uuid4().hex[:8] / os.path.basename(path)
        with contextlib.suppress(OSError, shutil.Error):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, target)
            moved.append(f"{path} -> {target}")
    if not moved:
        return None
    return (
        "Note: the command made files that the next kernel or IPython start would run, "
        "outside the sandbox; they were moved aside, not run:\n"
        + "\n".join(f"  {line}" for line in moved)
        + "\nAsk the person to put one back themselves if it is wanted."
    )


def _runs_at_start(path: str, places: StartupPlaces) -> bool:
    """Whether a new entry would run: a module or a package of a start name, a ``.pth``
    file with an ``import`` line, or a start-up folder that did not exist."""
    if "/__pycache__/" in path:
        return False
    if path in places.folders:
        return True
    name = os.path.basename(path).casefold()
    if name.endswith(".pth") and not os.path.isdir(path):
        return _imports(Path(path))
    if os.path.isdir(path) and not os.path.islink(path):
        return bool(glob.glob(glob.escape(path) + "/__init__.*"))
    return True


def _imports(path: Path) -> bool:
    """``site`` runs the lines of a ``.pth`` file that start with ``import``."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return True
    return any(line.startswith(("import ", "import\t")) for line in lines)
