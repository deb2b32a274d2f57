"""The paths a git repository tracks, stages or ever committed, learned without running the
repository's or the user's code: the repository is found and vetted by `git_state`, and git
runs closed (`git_state.closed_argv`, `git_state.closed_env`). A repository whose state
would send git elsewhere is not read: `git_paths` answers None ("can't tell") and
`git_problem` says why.
"""

from __future__ import annotations

import os
import subprocess

from .git_state import GIT_TIMEOUT_S, GitRepo, Unreadable, closed_argv, closed_env, find_repo

_GIT_CACHE: dict[str, tuple[tuple[object, ...], frozenset[str], frozenset[str]]] = {}
_NO_REPO: frozenset[str] = frozenset()


def git_paths(directory: str, *, untracked: bool = True) -> frozenset[str] | None:
    """Absolute paths the repository around `directory` tracks, stages, or has in any commit
    of any ref, and with `untracked` the files it neither tracks nor ignores (empty outside a
    repository; None when it can't be told, see `git_problem`). Cached until the
    repository's index, HEAD, refs or config change."""
    repo = find_repo(directory)
    if repo is None:
        return _NO_REPO
    if isinstance(repo, Unreadable):
        return None
    key = _state_key(repo)
    cached = _GIT_CACHE.get(repo.top)
    if cached is not None and cached[0] == key:
        return cached[1] if untracked else cached[2]
    # `-t` tags each name: "? " for a file git does not track, a letter for one it does.
    listed = _git_lines(repo, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
    history = _git_lines(
        repo,
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
    top = repo.top
    tracked = [n[2:] for n in listed if n[:1] not in ("?", "")]
    others = [n[2:] for n in listed if n[:1] == "?"]
    known = frozenset(f"{top}/{n}" for n in (*tracked, *history) if n)
    names = known | frozenset(f"{top}/{n}" for n in others if n)
    _GIT_CACHE[top] = (key, names, known)
    return names if untracked else known


def git_problem(directory: str) -> str | None:
    """Why the repository around `directory` is not read (None when it is, or there is
    none)."""
    repo = find_repo(directory)
    return repo.reason if isinstance(repo, Unreadable) else None


def _state_key(repo: GitRepo) -> tuple[object, ...]:
    names = (
        (repo.git_dir, "index"),
        (repo.git_dir, "HEAD"),
        (repo.common_dir, "packed-refs"),
        (repo.common_dir, "refs/heads"),
        (repo.common_dir, "refs/stash"),
        (repo.git_dir, "logs/HEAD"),
        (repo.common_dir, "config"),
    )
    return (repo.git_dir, repo.common_dir, *(_mtime(os.path.join(d, n)) for d, n in names))


def _git_lines(repo: GitRepo, *args: str) -> list[str] | None:
    try:
        done = subprocess.run(
            closed_argv(repo, *args),
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
            env=closed_env(repo),
            cwd=repo.top,
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
