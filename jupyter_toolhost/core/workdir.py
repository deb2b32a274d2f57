"""Which folder the agent works in, where that choice came from, and which settings apply.

A kernel started by a local Jupyter server runs in its notebook's folder, and the server
tells it the notebook's path in ``JPY_SESSION_NAME``. A kernel behind a Kernel Gateway (or
Enterprise Gateway, or a remote spawner) runs wherever the gateway starts it: the gateway
passes the kernel only variables whose names start with ``KERNEL_`` (and its whitelists), so
``JPY_SESSION_NAME`` is lost; Jupyter Server sends the notebook's folder as
``KERNEL_WORKING_DIR``, which Jupyter Kernel Gateway passes on but does not use. Settings
files (``.toolhost/settings.json``) beside the notebook then silently do not apply.

So the working folder is, the first that is given:

1. ``%agent cwd PATH`` in this kernel;
2. ``c.ToolHost.root_dir`` (an IPython kernel config file);
3. the environment variable ``KERNEL_TOOLHOST_ROOT`` (a ``KERNEL_`` name, so it passes
   through Jupyter Server's gateway client and both gateways);
4. the notebook's folder, from ``JPY_SESSION_NAME`` or ``KERNEL_WORKING_DIR``, when that
   folder exists on the kernel's machine;
5. the kernel's own folder.

`WorkingFolder.notice` is the one line a session's first cell shows when the folder is not
the notebook's (or the notebook's folder is not on this machine), naming the settings files
in force, or saying that none are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ROOT_ENV",
    "WorkingFolder",
    "resolve_working_folder",
    "same_folder",
]

ROOT_ENV = "KERNEL_TOOLHOST_ROOT"
"""The environment variable that sets the working folder (a gateway passes `KERNEL_*`)."""


@dataclass(frozen=True)
class WorkingFolder:
    """The folder the agent works in, and what is known about the notebook's own."""

    path: Path
    source: str
    """Where the choice came from: ``%agent cwd``, ``c.ToolHost.root_dir``, the variable's
    name, ``JPY_SESSION_NAME``, ``KERNEL_WORKING_DIR`` or ``the kernel's folder``."""
    notebook: Path | None = None
    """The notebook's folder as the front end gave it (None: not told)."""
    notebook_here: bool = False
    """Whether that folder exists on the kernel's machine."""

    @property
    def is_notebook_folder(self) -> bool:
        return (
            self.notebook is not None
            and self.notebook_here
            and same_folder(self.path, self.notebook)
        )

    def notice(self, settings: Sequence[Path]) -> str | None:
        """One line for a session's first cell when the folder is not the notebook's own,
        or None when it is (or nothing says where the notebook is)."""
        if self.notebook is None or self.is_notebook_folder:
            return None
        if self.notebook_here:
            where = f"not the notebook's folder {self.notebook}"
        else:
            where = f"the notebook's folder {self.notebook} is not on the kernel's machine"
        if settings:
            found = "settings: " + ", ".join(str(path) for path in settings)
        else:
            found = "no settings files apply here"
        return (
            f"Working folder {self.path} ({self.source}; {where}); {found}. "
            "Set it with %agent cwd PATH."
        )


def resolve_working_folder(
    *,
    explicit: str | os.PathLike[str] | None = None,
    configured: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> WorkingFolder:
    """The working folder by the order in the module docstring. A folder given by
    `explicit`, `configured` or the environment variable must exist (`ValueError`)."""
    env = os.environ if environ is None else environ
    here = Path(cwd) if cwd is not None else Path.cwd()
    notebook, told_by = _notebook_folder(env, here)
    notebook_here = notebook is not None and notebook.is_dir()
    given = [
        ("%agent cwd", explicit),
        ("c.ToolHost.root_dir", configured or None),
        (ROOT_ENV, env.get(ROOT_ENV) or None),
    ]
    for source, value in given:
        if value is None:
            continue
        path = Path(os.path.expanduser(os.fspath(value)))
        path = path if path.is_absolute() else here / path
        if not path.is_dir():
            raise ValueError(f"{source}: {path} is not a folder on the kernel's machine")
        return WorkingFolder(path.resolve(), source, notebook, notebook_here)
    if notebook is not None and notebook_here:
        return WorkingFolder(notebook.resolve(), told_by, notebook, True)
    return WorkingFolder(here.resolve(), "the kernel's folder", notebook, notebook_here)


def _notebook_folder(env: Mapping[str, str], here: Path) -> tuple[Path | None, str]:
    session = env.get("JPY_SESSION_NAME")
    if session:
        path = Path(session)
        path = path if path.is_absolute() else here / path
        # A notebook path names a file; some front ends give a folder or an untitled name.
        return (path if path.is_dir() else path.parent), "JPY_SESSION_NAME"
    working = env.get("KERNEL_WORKING_DIR")
    if working:
        return Path(working), "KERNEL_WORKING_DIR"
    return None, ""


def same_folder(first: Path, second: Path) -> bool:
    """Whether two paths name one folder (links resolved)."""
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return first == second
