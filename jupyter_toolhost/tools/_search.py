"""Finding files the way ripgrep does, for Glob and Grep: the `rg` binary or pure Python.

Both backends follow the same rules, so they give the same answers: `.gitignore` files from
the search root down apply (in a git repository or not; ignore files above the root, global
excludes, `.ignore` and `.rgignore` do not), `.git` is never searched, symbolic links are not
followed, and glob patterns have gitignore semantics (`*.py` matches at any depth, `src/*.py`
only directly under `src`, `{a,b}` alternatives expand).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

RG_ENV = "JUPYTER_TOOLHOST_RG"
"""Path of the `rg` binary to use; `none` forces the pure-Python fallback."""

RG_COMMON_FLAGS: tuple[str, ...] = (
    "--no-config",
    "--no-require-git",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-ignore-dot",
    "--color=never",
)
"""Flags that make ripgrep follow exactly the rules of the Python fallback."""


def rg_binary() -> str | None:
    """The ripgrep binary: `$JUPYTER_TOOLHOST_RG`, the one beside this Python (the `ripgrep`
    wheel installs it there), or one on PATH; None when there is none."""
    configured = os.environ.get(RG_ENV)
    if configured:
        return None if configured.lower() == "none" else configured
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def expand_braces(pattern: str) -> list[str]:
    """`*.{ts,tsx}` → `*.ts`, `*.tsx` (nested braces expand too)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    expanded: list[str] = []
    for option in match.group(1).split(","):
        expanded.extend(expand_braces(head + option + tail))
    return expanded


@dataclass(frozen=True, slots=True)
class GlobFilter:
    """rg-style `--glob` filters: a file must match one positive glob (if any) and no
    negated (`!`) one. Paths are relative to the search root, with `/` separators."""

    include: pathspec.PathSpec | None
    exclude: pathspec.PathSpec | None

    @classmethod
    def of(cls, globs: Sequence[str]) -> GlobFilter:
        positive: list[str] = []
        negative: list[str] = []
        for glob in globs:
            target = negative if glob.startswith("!") else positive
            target.extend(expand_braces(glob.removeprefix("!")))
        return cls(
            include=pathspec.GitIgnoreSpec.from_lines(positive) if positive else None,
            exclude=pathspec.GitIgnoreSpec.from_lines(negative) if negative else None,
        )

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True: include (overrides ignore rules, like rg); False: skip; None: no say.

        A directory is never skipped for failing to match a positive glob (its files are
        checked one by one)."""
        target = relative + "/" if is_dir else relative
        if self.exclude is not None and self.exclude.match_file(target):
            return False
        if self.include is None:
            return None
        if self.include.match_file(target):
            return True
        return None if is_dir else False


@dataclass(frozen=True, slots=True)
class _IgnoreLayer:
    base: str
    """The directory of the .gitignore, relative to the root ("" for the root itself)."""
    spec: pathspec.GitIgnoreSpec


def _ignored(layers: Sequence[_IgnoreLayer], relative: str, is_dir: bool) -> bool:
    verdict: bool | None = None
    for layer in layers:
        inner = relative[len(layer.base) + 1 :] if layer.base else relative
        result = layer.spec.check_file(inner + "/" if is_dir else inner)
        if result.include is not None:
            verdict = result.include
    return bool(verdict)


def _load_ignore(directory: Path, base: str) -> _IgnoreLayer | None:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return _IgnoreLayer(base, pathspec.GitIgnoreSpec.from_lines(text.splitlines()))


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """A file the walk yields."""

    relative: str
    path: str
    whitelisted: bool
    """A glob matched it: type filters do not apply (as in ripgrep)."""


def walk_files(
    root: Path, *, hidden: bool = False, globs: GlobFilter | None = None
) -> Iterator[WalkedFile]:
    """Every file under `root` that ripgrep would search, in a stable order."""
    yield from _walk(root, "", [], hidden, globs or GlobFilter(None, None))


def _walk(
    directory: Path,
    relative: str,
    layers: list[_IgnoreLayer],
    hidden: bool,
    globs: GlobFilter,
) -> Iterator[WalkedFile]:
    layer = _load_ignore(directory, relative)
    if layer is not None:
        layers = [*layers, layer]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        child = f"{relative}/{name}" if relative else name
        if name == ".git" or entry.is_symlink():
            continue
        is_dir = entry.is_dir()
        if not is_dir and not entry.is_file():
            continue
        verdict = globs.verdict(child, is_dir)
        if verdict is False:
            continue
        if verdict is None and (
            (not hidden and name.startswith(".")) or _ignored(layers, child, is_dir)
        ):
            continue
        if is_dir:
            yield from _walk(Path(entry.path), child, layers, hidden, globs)
        else:
            yield WalkedFile(child, entry.path, whitelisted=verdict is True)
