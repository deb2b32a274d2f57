"""The paths a git repository tracks, stages or ever committed, learned without running the
repository's or the user's code: git is started with no system or user configuration, a
clean environment and overrides for everything in ``.git/config`` that could start a
program (`git_argv`, `git_env`).
"""

from __future__ import annotations

import os

_GIT_CACHE: dict[str, tuple[tuple[object, ...], frozenset[str], frozenset[str]]] = {}
_NO_REPO: frozenset[str] = frozenset()


def git_paths(directory: str, *, untracked: bool = True) -> frozenset[str] | None:
    """Absolute paths the repository around `directory` tracks, stages, or has in any commit
    of any ref, and with `untracked` the files it neither tracks nor ignores (empty outside a
    repository; None when git cannot tell). Cached until the repository's index, HEAD or
    refs change."""
    top = _git_top(directory)
    if top is None:
        return _NO_REPO
    git = os.path.join(top, ".git")
    key = tuple(
        _mtime(os.path.join(git, name))
        for name in ("index", "HEAD", "packed-refs", "refs/heads", "refs/stash", "logs/HEAD")
    )
    cached = _GIT_CACHE.get(top)
    if cached is not None and cached[0] == key:
        return cached[1] if untracked else cached[2]
    # `-t` tags each name: "? " for a file git does not track, a letter for one it does.
    listed = _git_lines(top, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
    history = _git_lines(
        top,
        "log",
        "--all",
        "--format=",
        "--name-only",
        "-z",
        "--no-renames",
        "--no-show-signature",
        "--no-ext-diff",
        "--no-textconv",
    )
    if listed is None or history is None:
        return None
    tracked = [n[2:] for n in listed if n[:1] not in ("?", "")]
    others = [n[2:] for n in listed if n[:1] == "?"]
    known = frozenset(f"{top}/{n}" for n in (*tracked, *history) if n)
    names = known | frozenset(f"{top}/{n}" for n in others if n)
    _GIT_CACHE[top] = (key, names, known)
    return names if untracked else known


def _git_top(directory: str) -> str | None:
    here = directory
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


_GIT_SAFE = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.attributesFile=/dev/null",
    "log.showSignature=false",
    "diff.external=",
    "gpg.program=false",
)
"""`-c` overrides for the git calls a decision makes: a repository's own `.git/config` is
written by whoever can write the folder (the agent included), so nothing in it that can run
a program (fsmonitor, hooks, pagers, signature checks, external diffs) is left in force.
`ls-files` and `log --name-only` run no filter or textconv (they read no file contents)."""

_GIT_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


def git_env() -> dict[str, str]:
    """The environment of a git call made while deciding: no ``GIT_*`` variable of the
    kernel's, no system or global config (``~/.gitconfig`` is the user's, but any process
    that ran as the user may have written it), and a home that holds nothing."""
    env = {k: os.environ[k] for k in _GIT_ENV_KEPT if k in os.environ}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "HOME": os.devnull,
            "XDG_CONFIG_HOME": os.devnull,
        }
    )
    return env


def git_argv(top: str, *args: str) -> list[str]:
    """``git`` with the safe overrides (`_GIT_SAFE`) for the repository at `top`."""
    overrides = [a for item in _GIT_SAFE for a in ("-c", item)]
    return ["git", "--no-pager", *overrides, "-C", top, *args]


def _git_lines(top: str, *args: str) -> list[str] | None:
    import subprocess

    try:
        done = subprocess.run(
            git_argv(top, *args),
            capture_output=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
            env=git_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [n.strip("\n") for n in done.stdout.decode(errors="replace").split("\0")]


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
