"""git is read, never obeyed: each kind of state git follows elsewhere, planted in a real
repository made in a temporary folder, first shown to run a program through git as the
permission engine used to start it, then shown not to run (and the repository refused with a
reason) through `git_paths`, the engine's way in.

Every program planted here only touches a marker file in the test's own folder.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from jupyter_toolhost.permissions import git_paths as engine_git
from jupyter_toolhost.permissions.git_state import (
    GitRepo,
    Unreadable,
    closed_argv,
    closed_env,
    find_repo,
)

_OLD_OVERRIDES = (
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
"""The overrides the engine's git ran with before it vetted the repository's state."""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    return done.stdout.decode()


def old_engine_git(top: Path, *args: str) -> None:
    """git as the engine ran it before: no user config, a clean environment, overrides for
    `.git/config`'s programs, but the repository's other state followed."""
    overrides = [a for o in _OLD_OVERRIDES for a in ("-c", o)]
    env = {
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    subprocess.run(
        ["git", "--no-pager", *overrides, "-C", str(top), *args],
        capture_output=True,
        check=False,
        env=env,
        timeout=30,
    )


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_text("SECRET")
    (root / "a.txt").write_text("a")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "one")
    return root


def hostile_store(folder: Path, marker: Path, *, src: Path) -> Path:
    """A git folder whose refs name an object it lacks and whose config makes git fetch it
    lazily through an `uploadpack` that touches `marker`."""
    (folder / "objects" / "info").mkdir(parents=True)
    (folder / "objects" / "pack").mkdir()
    (folder / "refs" / "heads").mkdir(parents=True)
    (folder / "refs" / "heads" / "main").write_text("12" * 20 + "\n")
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(promisor_config(marker, src=src))
    return folder


def promisor_config(marker: Path, *, src: Path) -> str:
    return (
        "[core]\n\trepositoryformatversion = 1\n"
        "[extensions]\n\tpartialclone = origin\n"
        f'[remote "origin"]\n\turl = {src}\n\tpromisor = true\n'
        f"\tuploadpack = touch {marker}; false\n"
    )


@dataclass
class Planted:
    top: Path
    """Where the engine looks (the folder a command runs in)."""
    marker: Path
    reason: str
    """A word the refusal must name."""


def plant_commondir(tmp: Path) -> Planted:
    """The issue's attack: a `commondir` sends git to a partial clone's config, and the
    engine's `git log --all` fetches through its uploadpack."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-commondir"
    evil = hostile_store(tmp / "evil", marker, src=tmp / "src")
    (root / ".git" / "commondir").write_text(f"{evil}\n")
    return Planted(root, marker, "commondir")


def plant_include(tmp: Path) -> Planted:
    """An `[include]`d file the config names (here: one in the working tree) makes the
    repository a partial clone of a remote whose uploadpack runs."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-include"
    (root / "inc.cfg").write_text(promisor_config(marker, src=tmp / "src"))
    with open(root / ".git" / "config", "a") as handle:
        handle.write("[include]\n\tpath = ../inc.cfg\n")
    _missing_object(root)
    return Planted(root, marker, "include.path")


def plant_include_if(tmp: Path) -> Planted:
    root = make_repo(tmp / "p")
    marker = tmp / "ran-includeif"
    (tmp / "inc.cfg").write_text(promisor_config(marker, src=tmp / "src"))
    with open(root / ".git" / "config", "a") as handle:
        handle.write(f'[includeIf "gitdir:{root}/"]\n\tpath = {tmp}/inc.cfg\n')
    _missing_object(root)
    return Planted(root, marker, "includeif")


def plant_config_worktree(tmp: Path) -> Planted:
    """`extensions.worktreeConfig` with a `config.worktree` that makes a partial clone."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-worktree-config"
    git(root, "config", "core.repositoryformatversion", "1")
    git(root, "config", "extensions.worktreeConfig", "true")
    config = promisor_config(marker, src=tmp / "src").replace("[core]\n\trepo", "[x]\n\tx")
    (root / ".git" / "config.worktree").write_text(config)
    _missing_object(root)
    return Planted(root, marker, "config.worktree")


def plant_promisor(tmp: Path) -> Planted:
    """The repository's own config names a promisor remote (written where the sandbox is
    off, or before the session)."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-promisor"
    git(root, "config", "core.repositoryformatversion", "1")
    git(root, "config", "extensions.partialClone", "origin")
    git(root, "config", "remote.origin.url", str(tmp / "src"))
    git(root, "config", "remote.origin.promisor", "true")
    git(root, "config", "remote.origin.uploadpack", f"touch {marker}; false")
    _missing_object(root)
    return Planted(root, marker, "partialclone")


def plant_gitdir_file(tmp: Path) -> Planted:
    """A `.git` file in a sub-folder (`gitdir: ...`) leads git to a hostile git folder."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-gitdir"
    evil = hostile_store(tmp / "evil", marker, src=tmp / "src")
    sub = root / "sub"
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {evil}\n")
    return Planted(sub, marker, "partialclone")


def plant_nested_repo(tmp: Path) -> Planted:
    """A `.git` folder in a sub-folder: a nested repository the engine walks into."""
    root = make_repo(tmp / "p")
    marker = tmp / "ran-nested"
    sub = root / "sub"
    sub.mkdir()
    hostile_store(sub / ".git", marker, src=tmp / "src")
    return Planted(sub, marker, "partialclone")


def plant_alternates(tmp: Path) -> Planted:
    """`objects/info/alternates` names another object store (a hostile one): git reads its
    objects as the repository's. No program runs; the history git reports is not the
    repository's own."""
    root = make_repo(tmp / "p")
    other = make_repo(tmp / "other")
    (other / "hidden.txt").write_text("x")
    git(other, "add", "hidden.txt")
    git(other, "commit", "-qm", "two")
    head = git(other, "rev-parse", "HEAD").strip()
    store = other / ".git" / "objects"
    (root / ".git" / "objects" / "info" / "alternates").write_text(f"{store}\n")
    (root / ".git" / "refs" / "heads" / "borrowed").write_text(head + "\n")
    return Planted(root, tmp / "no-program-here", "alternates")


def _missing_object(root: Path) -> None:
    """A ref to an object the repository lacks: `git log --all` must fetch it."""
    (root / ".git" / "refs" / "heads" / "gone").write_text("34" * 20 + "\n")


VECTORS: dict[str, Callable[[Path], Planted]] = {
    "commondir": plant_commondir,
    "include": plant_include,
    "includeIf": plant_include_if,
    "config.worktree": plant_config_worktree,
    "promisor": plant_promisor,
    "gitdir file": plant_gitdir_file,
    "nested .git": plant_nested_repo,
    "alternates": plant_alternates,
}


@pytest.mark.parametrize("vector", list(VECTORS))
def test_planted_state_is_refused_and_runs_nothing(tmp_path: Path, vector: str) -> None:
    planted = VECTORS[vector](tmp_path)
    (tmp_path / "src").mkdir()
    log = ("log", "--all", "--format=", "--name-only", "-z", "--no-renames")
    if vector == "alternates":
        old_engine_git(planted.top, *log)  # reads the other store's history
    else:
        old_engine_git(planted.top, *log)
        assert planted.marker.exists(), "the planted program did not run through old git"
        planted.marker.unlink()
    engine_git._GIT_CACHE.clear()  # pyright: ignore[reportPrivateUsage]
    assert engine_git.git_paths(str(planted.top)) is None  # can't tell: fail closed
    problem = engine_git.git_problem(str(planted.top))
    assert problem is not None and planted.reason in problem.lower()
    assert not planted.marker.exists()


def test_a_plain_repository_is_read(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p")
    (root / "new.txt").write_text("untracked")
    paths = engine_git.git_paths(str(root))
    assert paths is not None
    assert {f"{root}/secrets/key.txt", f"{root}/a.txt", f"{root}/new.txt"} <= paths
    assert engine_git.git_problem(str(root)) is None


def test_a_linked_worktree_is_read(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p")
    git(root, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    found = find_repo(str(tmp_path / "wt"))
    assert isinstance(found, GitRepo)
    assert found.common_dir == os.path.realpath(root / ".git")
    assert found.git_dir == os.path.realpath(root / ".git" / "worktrees" / "wt")
    assert f"{tmp_path}/wt/secrets/key.txt" in (engine_git.git_paths(str(tmp_path / "wt")) or ())


def test_the_closed_git_runs_no_program_the_config_names(tmp_path: Path) -> None:
    """Every program-naming setting in `.git/config` and in `config.worktree` (read through
    the command line's overrides, which outrank both), with a `git status`, `worktree add`
    and `log -p` that would start each of them."""
    root = make_repo(tmp_path / "p")
    marker = tmp_path / "ran"
    hook = tmp_path / "hooks"
    hook.mkdir()
    for name in ("post-checkout", "pre-commit", "reference-transaction"):
        (hook / name).write_text(f"#!/bin/sh\ntouch {marker}-{name}\n")
        (hook / name).chmod(0o755)
    (root / ".gitattributes").write_text("*.txt filter=Evil diff=evil\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attrs")
    settings = {
        "core.hooksPath": str(hook),
        "core.fsmonitor": f"touch {marker}-fsmonitor; false",
        "core.pager": f"touch {marker}-pager; cat",
        "filter.Evil.smudge": f"touch {marker}-smudge; cat",  # a subsection keeps its case
        "filter.Evil.clean": f"touch {marker}-clean; cat",
        "filter.Evil.process": f"touch {marker}-process",
        "diff.evil.textconv": f"touch {marker}-textconv; cat",
        "diff.evil.command": f"touch {marker}-diffcmd",
        "diff.external": f"touch {marker}-external",
        "log.showSignature": "true",
        "gpg.program": f"touch {marker}-gpg",
    }
    for key, value in settings.items():
        git(root, "config", key, value)
    (root / "a.txt").write_text("changed")  # status and diff have work to do
    repo = find_repo(str(root))
    assert isinstance(repo, GitRepo)
    for args in (
        ("status", "--porcelain"),
        ("log", "-p", "--all"),
        ("diff", "--ext-diff"),  # fails: the driver's command is overridden to nothing
        ("worktree", "add", "-q", "-b", "w", str(tmp_path / "wt"), "HEAD"),
    ):
        done = subprocess.run(
            closed_argv(repo, *args), env=closed_env(repo), capture_output=True, check=False
        )
        assert done.returncode == 0 or args[0] == "diff", done.stderr
    assert (tmp_path / "wt" / "a.txt").read_text() == "a"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == []
    # and the same settings do run through plain git
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=False)
    assert (tmp_path / "ran-fsmonitor").exists()


def test_a_dot_git_file_that_leads_nowhere_is_refused(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p")
    sub = root / "sub"
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {tmp_path}/nothing\n")
    found = find_repo(str(sub))
    assert isinstance(found, Unreadable) and "not a git folder" in found.reason
    (sub / ".git").write_text("not a pointer")
    assert isinstance(find_repo(str(sub)), Unreadable)


def test_a_setting_no_override_can_reach_is_refused(tmp_path: Path) -> None:
    """`-c NAME=VALUE` splits at the first `=`, so `-c filter.x=y.smudge=` sets `filter.x`:
    a filter named `x=y` would still run on checkout. Such a repository is not read."""
    root = make_repo(tmp_path / "p")
    marker = tmp_path / "ran"
    (root / ".gitattributes").write_text("* filter=x=y\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attrs")
    with open(root / ".git" / "config", "a") as handle:
        handle.write(f'[filter "x=y"]\n\tsmudge = touch {marker}; cat\n')
    found = find_repo(str(root))
    assert isinstance(found, Unreadable) and "filter.x=y.smudge" in found.reason
    unvetted = GitRepo(str(root), str(root / ".git"), str(root / ".git"), ("filter.x=y.smudge",))
    args = ("worktree", "add", "-q", "-b", "w", str(tmp_path / "wt"), "HEAD")
    subprocess.run(closed_argv(unvetted, *args), env=closed_env(unvetted), check=True)
    assert marker.exists()  # why it must be refused: the override did not reach it


def test_the_command_line_outranks_config_worktree_and_includes(tmp_path: Path) -> None:
    """If a `config.worktree` or an included file appeared after the check (a background
    command), the overrides still hold: `-c core.hooksPath=/dev/null` beats both, so `git
    worktree add` runs no post-checkout hook and `git status` no fsmonitor."""
    root = make_repo(tmp_path / "p")
    marker = tmp_path / "ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {marker}-hook\n")
    (hooks / "post-checkout").chmod(0o755)
    repo = find_repo(str(root))
    assert isinstance(repo, GitRepo)  # vetted before anything was planted
    git(root, "config", "core.repositoryformatversion", "1")
    git(root, "config", "extensions.worktreeConfig", "true")
    evil = f"[core]\n\thooksPath = {hooks}\n\tfsmonitor = touch {marker}-fsmonitor; false\n"
    (root / ".git" / "config.worktree").write_text(evil)
    (tmp_path / "inc.cfg").write_text(evil)
    with open(root / ".git" / "config", "a") as handle:
        handle.write(f"[include]\n\tpath = {tmp_path}/inc.cfg\n")
    (root / "a.txt").write_text("changed")
    for args in (
        ("status", "--porcelain"),
        ("worktree", "add", "-q", "-b", "w", str(tmp_path / "wt"), "HEAD"),
    ):
        done = subprocess.run(closed_argv(repo, *args), env=closed_env(repo), check=False)
        assert done.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == []
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=False)
    assert (tmp_path / "ran-fsmonitor").exists()  # plain git obeys them
