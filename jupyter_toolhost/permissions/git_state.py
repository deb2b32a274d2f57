"""A git repository read, never obeyed: where its state lies, whether that state can be read
safely, and how to run git so that it runs nothing the repository names.

Everything in a repository's git folder can have been written by the agent: by a sandboxed
command (which may create new files in ``.git/``, since git itself must), by a program an
allowed command started, or by an unsandboxed command in ``bypassPermissions``. git follows
more of that state than its config: a ``commondir`` file sends it to another folder's config,
refs and objects; a ``.git`` file (``gitdir:``) to another git folder; ``objects/info/
alternates`` to another object store; ``config.worktree`` (with ``extensions.worktreeConfig``)
and ``[include]``/``[includeIf]`` to more configuration; a promisor remote makes it fetch a
missing object on its own, through the remote's ``uploadpack`` or ``sshCommand``.

Decision: run the git binary with every one of these closed, and refuse to read what can't
be closed. A library (dulwich) was the other choice; it reads ``commondir`` and alternates
too, so it needs the same checks, and the permission engine wants git's own answers (its
ignore rules, its index extensions), which a second implementation may give differently.
So:

- `find_repo` locates the repository by reading files (git runs only as the parser of one
  config file, ``git config --file F --no-includes --list``). It answers `Unreadable` (the
  caller fails closed and says why) when the repository holds state that sends git
  elsewhere: a ``commondir`` in a repository's own ``.git`` folder (git writes one only in a
  linked worktree's folder), ``objects/info/alternates`` (or ``http-alternates``), a
  ``config.worktree``, a ``.git`` file that does not lead to a git folder, or a config that
  includes other files, turns on ``worktreeConfig``, names a promisor remote, or has a
  setting whose name holds ``=`` (``[filter "a=b"]``: ``-c`` splits at the first ``=``, so
  no override could reach it).
- `closed_env` and `closed_argv` run git with ``GIT_DIR``, ``GIT_COMMON_DIR`` and
  ``GIT_WORK_TREE`` fixed to what `find_repo` found (git's ref store still reads a
  ``commondir`` file on its own, hence the refusal above), no system or user configuration,
  a clean environment, ``GIT_NO_LAZY_FETCH=1``, no transport at all (``GIT_ALLOW_PROTOCOL``
  names none), and ``-c`` overrides, which outrank every configuration file, for every
  setting that names a program: hooks, fsmonitor, pagers, editors, ssh and proxy commands,
  credential helpers, signature programs, external diffs, and each filter, diff and merge
  driver the repository's config defines (`program_overrides`).

The checks and the run are not one atomic step: a background command could plant a file in
between. What it plants then still can't run: the overrides and the closed environment hold
whatever git reads.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

GIT_TIMEOUT_S = 10.0

_SAFE_OVERRIDES = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=false",
    "core.sshCommand=false",
    "core.gitProxy=false",
    "core.attributesFile=/dev/null",
    "credential.helper=",
    "log.showSignature=false",
    "diff.external=",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "submodule.recurse=false",
    "protocol.allow=never",
    "fetch.recurseSubmodules=false",
    "gc.auto=0",
    "maintenance.auto=false",
)
"""`-c` overrides for every git call: the command line outranks every configuration file
(``.git/config``, ``config.worktree``, included files), so nothing there that starts a
program stays in force."""

_PROGRAM_KEYS = frozenset(
    {"smudge", "clean", "process", "textconv", "command", "driver", "uploadpack",
     "receivepack", "proxy", "sshcommand", "program", "helper", "vcs",
     "alternaterefscommand"}
)  # fmt: skip
"""The last part of a configuration name that names a program (``filter.lfs.smudge``,
``diff.pdf.textconv``, ``merge.ours.driver``, ``remote.origin.uploadpack``,
``remote.x.vcs`` (a remote helper)...). Every name in ``pager.*``, ``mergetool.*`` and
``difftool.*`` counts too."""

_REFUSED_PREFIXES = {
    "include.": "it includes another configuration file",
    "includeif.": "it includes another configuration file",
    "extensions.worktreeconfig": "it reads config.worktree as configuration",
    "extensions.partialclone": "it is a partial clone, which fetches missing objects",
}


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A repository whose state can be read safely."""

    top: str
    """The working tree (the folder that holds ``.git``)."""
    git_dir: str
    """Its git folder (``$GIT_DIR``): ``top/.git``, or where a ``.git`` file points."""
    common_dir: str
    """Where its config, refs and objects are: `git_dir`, or a linked worktree's main one."""
    keys: tuple[str, ...] = ()
    """The names in its configuration (as git prints them: section and name in lower case,
    a subsection as written), for `program_overrides`."""

    @property
    def real_top(self) -> str:
        """`top` with every symlink resolved."""
        return os.path.realpath(self.top)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A repository that holds state git would follow elsewhere: it is not read."""

    top: str
    reason: str


@dataclass(frozen=True, slots=True)
class GitFolders:
    """Where a repository's state lies, as its files say (nothing vetted yet)."""

    top: str
    git_dir: str
    common_dir: str


def locate(directory: str) -> GitFolders | Unreadable | None:
    """The folders of the repository around `directory` (None outside any). A ``commondir``
    in a repository's own ``.git`` folder is not followed here (`find_repo` refuses it)."""
    top = _nearest_dot_git(directory)
    if top is None:
        return None
    dot = os.path.join(top, ".git")
    if os.path.isdir(dot):
        git_dir = os.path.realpath(dot)
        return GitFolders(top, git_dir, git_dir)
    found = _follow_gitfile(top, dot)
    if isinstance(found, Unreadable):
        return found
    return GitFolders(top, *found)


def find_repo(directory: str) -> GitRepo | Unreadable | None:
    """The repository around `directory` (None outside any), found by reading files, and
    refused (`Unreadable`) when it holds state that would send git elsewhere."""
    found = locate(directory)
    if found is None or isinstance(found, Unreadable):
        return found
    top, git_dir, common = found.top, found.git_dir, found.common_dir
    if git_dir == common and os.path.lexists(os.path.join(git_dir, "commondir")):
        return Unreadable(
            top,
            f"{git_dir}/commondir exists; a repository's own git folder never has one (git "
            "writes it only in a linked worktree's folder), and it would send git to "
            "another folder's configuration",
        )
    for folder in dict.fromkeys((git_dir, common)):
        planted = os.path.join(folder, "config.worktree")
        if os.path.lexists(planted):
            return Unreadable(top, f"{planted} exists, which git may read as configuration")
    for name in ("alternates", "http-alternates"):
        planted = os.path.join(common, "objects", "info", name)
        if os.path.lexists(planted):
            return Unreadable(top, f"{planted} exists, which sends git to another object store")
    keys = config_keys(os.path.join(common, "config"))
    if keys is None:
        return Unreadable(top, f"git could not read {common}/config")
    for key in keys:
        if "=" in key:  # `-c NAME=VALUE` splits at the first "=": no override could reach it
            return Unreadable(
                top,
                f"{common}/config has a setting named {key!r}, which git's command line "
                "can't override",
            )
        for prefix, why in _REFUSED_PREFIXES.items():
            if key.startswith(prefix):
                return Unreadable(top, f"{common}/config sets {key}: {why}")
        if key.startswith("remote.") and key.endswith((".promisor", ".partialclonefilter")):
            return Unreadable(
                top, f"{common}/config sets {key}: a promisor remote, which git fetches from"
            )
    return GitRepo(top=top, git_dir=git_dir, common_dir=common, keys=tuple(keys))


def _nearest_dot_git(directory: str) -> str | None:
    here = os.path.abspath(directory)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _follow_gitfile(top: str, dot: str) -> tuple[str, str] | Unreadable:
    """The git folder and common folder a ``.git`` file (``gitdir: PATH``) leads to: a git
    folder (``HEAD`` and ``objects`` or a ``commondir``), whose ``commondir``, if any, leads
    to a git folder that has none."""
    try:
        with open(dot, "rb") as handle:
            text = handle.read(4097).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return Unreadable(top, f"{dot} is neither a git folder nor a readable gitdir file")
    if len(text) > 4096 or not text.startswith("gitdir:"):
        return Unreadable(top, f"{dot} is neither a git folder nor a gitdir file")
    target = text.removeprefix("gitdir:").strip()
    git_dir = os.path.realpath(os.path.join(top, target))
    if not os.path.isfile(os.path.join(git_dir, "HEAD")):
        return Unreadable(top, f"{dot} points to {git_dir}, which is not a git folder")
    pointer = os.path.join(git_dir, "commondir")
    if not os.path.lexists(pointer):
        return git_dir, git_dir
    try:
        with open(pointer, encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(git_dir, handle.read(4096).strip()))
    except (OSError, UnicodeDecodeError):
        return Unreadable(top, f"{pointer} can't be read")
    if not os.path.isdir(os.path.join(common, "objects")) or os.path.lexists(
        os.path.join(common, "commondir")
    ):
        return Unreadable(top, f"{pointer} points to {common}, which is not a main git folder")
    return git_dir, common


_CONFIG_CACHE: dict[str, tuple[tuple[int, ...], list[tuple[str, str]]]] = {}


def config_entries(path: str) -> list[tuple[str, str]] | None:
    """The settings of one configuration file as (name, value) pairs, read by
    git's own parser without following includes; [] when the file is absent, None when git
    can't read it. Cached until the file changes."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    cached = _CONFIG_CACHE.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    entries = _read_entries(path)
    if entries is not None:
        _CONFIG_CACHE[path] = (stamp, entries)
    return entries


def _read_entries(path: str) -> list[tuple[str, str]] | None:
    argv = ["git", "config", "--file", path, "--no-includes", "--null", "--list"]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
            # outside any repository: nothing but the file is read
            env={**base_env(), "GIT_DIR": os.path.join(os.devnull, "none")},
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for entry in done.stdout.decode("utf-8", errors="replace").split("\0"):
        if entry:
            key, _, value = entry.partition("\n")
            entries.append((key, value))  # git lowers section and name, not a subsection
    return entries


def config_keys(path: str) -> list[str] | None:
    """The names set in one configuration file (see `config_entries`)."""
    entries = config_entries(path)
    return None if entries is None else [key for key, _value in entries]


def include_targets(path: str) -> list[str]:
    """The files a configuration file includes (``include.path``, ``includeIf.*.path``),
    made absolute as git does: ``~/`` from the user's home, relative to the file's folder."""
    found: list[str] = []
    for key, value in config_entries(path) or ():
        if not (key.startswith(("include.", "includeif.")) and key.endswith(".path")):
            continue
        if not value:
            continue
        if value.startswith("~/"):
            value = os.path.expanduser("~") + value[1:]
        found.append(os.path.normpath(os.path.join(os.path.dirname(path), value)))
    return found


def config_value(path: str, name: str) -> str | None:
    """The last value `name` (``section.name`` in lower case) has in one configuration file,
    or None."""
    values = [value for key, value in config_entries(path) or () if key == name]
    return values[-1] if values else None


def program_overrides(keys: tuple[str, ...] | list[str]) -> list[str]:
    """``-c NAME=`` for each setting among `keys` that names a program (a filter's smudge,
    clean and process, a diff driver's textconv, ...), so that git runs none of them."""
    found: list[str] = []
    for key in dict.fromkeys(keys):
        section, _, rest = key.partition(".")
        last = rest.rpartition(".")[2]
        if last in _PROGRAM_KEYS or section in ("pager", "mergetool", "difftool"):
            found.append(f"{key}=")
        if section == "filter" and last in ("smudge", "clean", "process"):
            found.append(f"{key.rpartition('.')[0]}.required=false")
    return found


_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def base_env() -> dict[str, str]:
    """A clean environment for git: none of the kernel's ``GIT_*`` variables, no system or
    user configuration (``~/.gitconfig`` can have been written by any process of the user),
    no lazy fetch, no transport, nothing to prompt with."""
    env = {k: os.environ[k] for k in _ENV_KEPT if k in os.environ}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_ALLOW_PROTOCOL": "none-allowed",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "false",
            "SSH_ASKPASS": "false",
            "GIT_SSH_COMMAND": "false",
            "GIT_EDITOR": "false",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "HOME": os.devnull,
            "XDG_CONFIG_HOME": os.devnull,
        }
    )
    return env


def closed_env(repo: GitRepo, *, optional_locks: bool = False) -> dict[str, str]:
    """`base_env` with the repository fixed to what `find_repo` found."""
    env = base_env()
    env.update(
        {"GIT_DIR": repo.git_dir, "GIT_COMMON_DIR": repo.common_dir, "GIT_WORK_TREE": repo.top}
    )
    if not optional_locks:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def closed_argv(repo: GitRepo, *args: str) -> list[str]:
    """``git`` with every program-naming setting overridden, then `args`."""
    overrides = [*_SAFE_OVERRIDES, *program_overrides(repo.keys)]
    return ["git", "--no-pager", *(a for o in overrides for a in ("-c", o)), *args]
