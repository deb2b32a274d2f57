"""git's state around the shell: what the sandbox makes read-only, and the files git would
follow that no Bash command may leave behind.

git must write inside its folder for the commands people run (``git add``, ``commit``,
``checkout -b``, ``stash``...): it creates ``index.lock``, ``HEAD.lock``, ``ORIG_HEAD``,
``COMMIT_EDITMSG``, ``packed-refs.lock`` and more directly in ``.git/`` and renames them into
place, so ``.git/`` itself stays writable in the sandbox (a read-only ``.git/`` with writable
children breaks every commit, and a file bound over a name git renames onto fails with
``EBUSY``). bubblewrap 0.8 has no overlay mounts.

So two layers:

- **Read-only in the sandbox** (`read_only_paths`): in each git folder of the repository
  (its own, a linked worktree's, the main one, each submodule's under ``.git/modules/``)
  ``config``, ``config.worktree``, ``hooks/``, ``info/``, ``commondir``, ``gitdir`` and
  ``objects/info/`` (made first when missing, so no ``alternates`` can be created in it);
  the ``commondir``, ``gitdir`` and ``config.worktree`` of every linked worktree's folder; a
  ``.git`` file (the repository's, each linked worktree's, and each submodule's in the
  working tree); every file a configuration includes; and ``/etc/gitconfig``, which root
  could otherwise write. Nothing that names a program can be changed.
- **Watched** (`watch`, `sweep`) for every Bash command and every background command: the
  files git follows that do not exist yet and whose folder must stay writable:
  ``commondir`` and ``gitdir`` in a repository's own ``.git/`` (git never writes these there:
  watched sandbox or not), and in the sandbox also ``config.worktree`` in each git folder,
  ``objects/info/alternates``, a missing included file, the user's ``~/.gitconfig`` and
  ``~/.config/git/config`` (``$XDG_CONFIG_HOME/git/config``), and ``/etc/gitconfig``. One
  that a command created is removed when the command ends, and the result says so. A
  background command is swept when it ends: while it runs, what it planted is there (the
  permission engine, which refuses to read such a repository, is not fooled; a person's own
  ``git`` in that window is).

Not covered: a repository the agent makes inside the working tree and stages as a gitlink
(``git add`` of a folder that holds its own ``.git``): a person's ``git status`` looks into
it and runs what its config names. The engine's git does not (``submodule.recurse`` off,
and the overrides reach the child git it starts).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...permissions.git_state import (
    GitFolders,
    Unreadable,
    config_value,
    include_targets,
    locate,
)

SUBMODULE_LIMIT = 200
"""Submodule git folders (``.git/modules/...``) covered per repository; more are left as
they are."""


def _repos(projects: Iterable[Path | str]) -> tuple[list[GitFolders], list[str]]:
    """The repositories around `projects`, and the ``.git`` files that lead nowhere."""
    found: dict[tuple[str, str, str], GitFolders] = {}
    broken: list[str] = []
    for project in projects:
        repo = locate(os.fspath(project))
        if isinstance(repo, Unreadable):
            broken.append(os.path.join(repo.top, ".git"))
        elif repo is not None:
            found[(repo.top, repo.git_dir, repo.common_dir)] = repo
    return list(found.values()), broken


def _worktree_dirs(common: str) -> list[str]:
    folder = os.path.join(common, "worktrees")
    try:
        return [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _submodule_dirs(common: str) -> list[str]:
    """The git folders of the repository's submodules (``.git/modules/NAME``, nested ones
    and names with slashes included)."""
    found: list[str] = []
    queue = [os.path.join(common, "modules")]
    while queue and len(found) < SUBMODULE_LIMIT:
        try:
            entries = [e.path for e in os.scandir(queue.pop()) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            if os.path.isfile(os.path.join(entry, "HEAD")):
                found.append(entry)
                queue.append(os.path.join(entry, "modules"))
            else:
                queue.append(entry)
    return found[:SUBMODULE_LIMIT]


def _submodule_pointer(gitdir: str) -> str | None:
    """The ``.git`` file in a submodule's working tree (``core.worktree`` of its folder)."""
    tree = config_value(os.path.join(gitdir, "config"), "core.worktree")
    if not tree:
        return None
    pointer = os.path.normpath(os.path.join(gitdir, tree, ".git"))
    return pointer if os.path.isfile(pointer) else None


def _worktree_pointer(admin: str) -> str | None:
    """The ``.git`` file of a linked worktree, which its folder's ``gitdir`` file names."""
    try:
        with open(os.path.join(admin, "gitdir"), encoding="utf-8") as handle:
            pointer = os.path.normpath(os.path.join(admin, handle.read(4096).strip()))
    except (OSError, UnicodeDecodeError):
        return None
    return pointer if os.path.basename(pointer) == ".git" and os.path.isfile(pointer) else None


SYSTEM_CONFIG = "/etc/gitconfig"
"""git's system-wide configuration (Debian's git reads it there): root can write it."""


def read_only_paths(projects: Iterable[Path | str]) -> list[str]:
    """The existing parts of the repositories around `projects` that decide what git runs or
    where it looks (some folders are made first, so that nothing can be created in them)."""
    repos, broken = _repos(projects)
    found: list[str] = [*broken, SYSTEM_CONFIG]
    for repo in repos:
        if os.path.isfile(os.path.join(repo.top, ".git")):
            found.append(os.path.join(repo.top, ".git"))  # a worktree's pointer
        for name in ("hooks", "info", os.path.join("objects", "info")):
            with contextlib.suppress(OSError):  # git reads these from the common folder
                os.makedirs(os.path.join(repo.common_dir, name), exist_ok=True)
        for folder in dict.fromkeys((repo.git_dir, repo.common_dir)):
            for name in ("config", "config.worktree", "hooks", "info", "commondir", "gitdir"):
                found.append(os.path.join(folder, name))
            found.append(os.path.join(folder, "objects", "info"))
        for admin in _worktree_dirs(repo.common_dir):
            found += [os.path.join(admin, n) for n in ("commondir", "gitdir", "config.worktree")]
            pointer = _worktree_pointer(admin)
            if pointer is not None:
                found.append(pointer)
        found += include_targets(os.path.join(repo.common_dir, "config"))
        for module in _submodule_dirs(repo.common_dir):
            for name in ("hooks", "info", os.path.join("objects", "info")):
                with contextlib.suppress(OSError):
                    os.makedirs(os.path.join(module, name), exist_ok=True)
            for name in ("config", "config.worktree", "hooks", "info", "commondir", "gitdir"):
                found.append(os.path.join(module, name))
            found.append(os.path.join(module, "objects", "info"))
            found += include_targets(os.path.join(module, "config"))
            pointer = _submodule_pointer(module)
            if pointer is not None:
                found.append(pointer)
    return [p for p in dict.fromkeys(found) if os.path.lexists(p)]


def watched_paths(projects: Iterable[Path | str], home: Path, *, sandboxed: bool) -> list[str]:
    """Paths git would follow if they existed, whose folders a command can write. Without
    the sandbox only those git itself never writes (``commondir`` and ``gitdir`` in a
    repository's own folder): there an approved command may mean to make the others
    (``git sparse-checkout`` writes ``config.worktree``)."""
    repos, _broken = _repos(projects)
    found: list[str] = []
    for repo in repos:
        if repo.git_dir == repo.common_dir:
            found += [os.path.join(repo.git_dir, n) for n in ("commondir", "gitdir")]
        if not sandboxed:
            continue
        for folder in dict.fromkeys((repo.git_dir, repo.common_dir)):
            found.append(os.path.join(folder, "config.worktree"))
        info = os.path.join(repo.common_dir, "objects", "info")
        found += [os.path.join(info, n) for n in ("alternates", "http-alternates")]
        found += [os.path.join(a, "config.worktree") for a in _worktree_dirs(repo.common_dir)]
        found += include_targets(os.path.join(repo.common_dir, "config"))
        for module in _submodule_dirs(repo.common_dir):
            found += [os.path.join(module, n) for n in ("commondir", "config.worktree")]
            found.append(os.path.join(module, "objects", "info", "alternates"))
            found += include_targets(os.path.join(module, "config"))
    if sandboxed:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.fspath(home / ".config")
        found += [os.fspath(home / ".gitconfig"), os.path.join(xdg, "git", "config")]
        found.append(SYSTEM_CONFIG)
    return list(dict.fromkeys(found))


def user_home() -> Path:
    """The user's home directory (whose git configuration is watched)."""
    return Path(os.path.expanduser("~"))


@dataclass(frozen=True, slots=True)
class Watch:
    """The watched paths of one command, and which of them existed when it started."""

    paths: tuple[str, ...]
    before: frozenset[str]


def watch(projects: Iterable[Path | str], home: Path, *, sandboxed: bool) -> Watch:
    """Note which watched paths exist before a command runs."""
    paths = tuple(watched_paths(projects, home, sandboxed=sandboxed))
    return Watch(paths, frozenset(p for p in paths if os.path.lexists(p)))


def sweep(noted: Watch) -> list[str]:
    """Remove the watched paths that appeared since `watch`; returns those removed."""
    removed: list[str] = []
    for path in noted.paths:
        if path in noted.before or not os.path.lexists(path):
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def notice(removed: list[str]) -> str:
    """What the model is told about files a command left that git would have followed."""
    names = ", ".join(removed)
    return (
        f"Note: removed {names}, created by this command. git follows such a file to other "
        "configuration, object stores or programs, so no command may leave one behind; "
        "change git's settings with the user instead."
    )
