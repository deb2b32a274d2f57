"""Paths for permission rules: gitignore-style patterns, resolution, working-directory checks.

Pattern roots follow Claude Code: ``//abs`` is absolute, ``~/x`` is under the home directory,
``/x`` is relative to the settings root (the directory that holds the settings file's
``.toolhost/`` folder: the project for project and local settings, the home directory for
user settings), ``./x`` or bare ``x`` is relative to the working directory. A pattern without
a slash matches at any depth below its root. ``*`` stays inside one path segment, ``**``
crosses segments, and a pattern that matches a directory matches everything beneath it —
but ``/data/allowed`` never matches ``/data/allowed_evil``.

Resolution of symlinks goes through a `PathResolver`, so the decision function does no I/O of
its own; `OsResolver` is the real one, `PureResolver` the lexical one for benchmarks.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, Protocol, TypeVar

from ..shell.globs import bracket, can_reach, expand
from .git_paths import git_paths, git_problem

T = TypeVar("T")

_WILDCARDS = frozenset("*?[")
TREE_LIMIT = 20_000
"""Entries a tree check walks before it assumes the tree holds a protected path."""
MEMO_SIZE = 4096
"""Paths (or command texts) a rule set remembers its answer for before it forgets them all."""
_MISS: Any = object()


class PathResolver(Protocol):
    """The only way the decision function touches the file system."""

    def realpath(self, path: str) -> str:
        """The path with every symlink resolved (as `os.path.realpath`)."""
        ...

    def home(self) -> str:
        """The user's home directory."""
        ...

    def tree_holds(self, root: str, match: Callable[[str], bool]) -> bool:
        """Whether some path below `root` satisfies `match` (True when it cannot tell)."""
        ...

    def git_holds(
        self, directory: str, match: Callable[[str], bool], *, untracked: bool = True
    ) -> bool:
        """Whether the git repository around `directory` tracks, stages or ever committed a
        path that satisfies `match` (True when it cannot tell; False outside a repository);
        with `untracked`, also a file it does not track and does not ignore."""
        ...

    def git_problem(self, directory: str) -> str | None:
        """Why the repository around `directory` can't be read safely (git would follow
        state the agent may have planted), or None."""
        ...

    def expand_glob(self, glob: str) -> tuple[list[str], bool]:
        """The existing paths an absolute shell glob matches, and whether that list is
        complete (see `shell_globs.expand`)."""
        ...


class OsResolver:
    """The real resolver: `os.path.realpath` and the user's home directory."""

    def __init__(self, *, home: str | None = None) -> None:
        self._home = home

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def home(self) -> str:
        return self._home if self._home is not None else os.path.expanduser("~")

    def tree_holds(self, root: str, match: Callable[[str], bool]) -> bool:
        """Walk `root` for a matching path (a symlink also by its target, never followed);
        past `TREE_LIMIT` entries, or in a tree that cannot be read, the answer is True."""
        stack, seen = [root], 0
        while stack:
            try:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        seen += 1
                        if match(entry.path) or (
                            entry.is_symlink() and match(os.path.realpath(entry.path))
                        ):
                            return True
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
            except (FileNotFoundError, NotADirectoryError):
                continue  # (gone, or a file: a file holds no tree)
            except OSError:
                return True
            if seen > TREE_LIMIT:
                return True
        return False

    def git_holds(
        self, directory: str, match: Callable[[str], bool], *, untracked: bool = True
    ) -> bool:
        paths = git_paths(directory, untracked=untracked)
        return True if paths is None else any(match(p) for p in paths)

    def git_problem(self, directory: str) -> str | None:
        return git_problem(directory)

    def expand_glob(self, glob: str) -> tuple[list[str], bool]:
        return expand(glob)


class PureResolver:
    """A resolver that touches nothing: paths are taken as they are (no symlinks)."""

    def __init__(self, *, home: str = "/home/user") -> None:
        self._home = home

    def realpath(self, path: str) -> str:
        return path

    def home(self) -> str:
        return self._home

    def tree_holds(self, root: str, match: Callable[[str], bool]) -> bool:
        return True  # nothing is read, so any tree may hold anything

    def git_holds(
        self, directory: str, match: Callable[[str], bool], *, untracked: bool = True
    ) -> bool:
        return True

    def git_problem(self, directory: str) -> str | None:
        return None

    def expand_glob(self, glob: str) -> tuple[list[str], bool]:
        return [], False  # nothing is read, so the glob may match anything


def absolute(path: str, *, cwd: str, home: str) -> str:
    """A tool input path made absolute (``~`` expanded, relative to `cwd`) and normalised."""
    return _absolute(path, cwd, home)


@lru_cache(maxsize=16384)
def _absolute(path: str, cwd: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    joined = path if path.startswith("/") else f"{cwd}/{path}"
    normal = posixpath.normpath(joined)
    return "/" + normal.lstrip("/")


def candidates(path: str, *, cwd: str, resolver: PathResolver) -> tuple[str, ...]:
    """The lexical absolute path and its symlink-resolved target (one if they agree)."""
    home = resolver.home() if path[:1] == "~" else ""  # (only `~` and `~/x` use it)
    lexical = _absolute(path, cwd, home)
    try:
        real = resolver.realpath(lexical)
    except (OSError, ValueError):
        real = lexical
    return (lexical,) if real == lexical else (lexical, real)


def is_inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it, by whole segments (not by string prefix)."""
    if root == "/":
        return path.startswith("/")
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def inside_any(paths: Iterable[str], roots: Sequence[str]) -> bool:
    """Whether every one of `paths` is inside at least one of `roots`."""
    return all(any(is_inside(p, r) for r in roots) for p in paths)


def fold(text: str) -> str:
    """The form deny patterns and paths are compared in: NFKC, case-folded."""
    return text.lower() if text.isascii() else deny_form(text).casefold()


def deny_form(text: str) -> str:
    """`text` as deny rules see it: NFKC-normalised, invisible format characters removed."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


_LOOKALIKES = str.maketrans(
    "аеорсухѕіјԁɡһкмтвнАЕОРСУХЅІЈКМТВНοαντικρεΟΑΝΤΙΚΡΕ",
    "aeopcyxsijdghkmtbhAEOPCYXSIJKMTBHoavtikpeOANTIKPE",
)


def skeleton(text: str) -> str:
    """`text` with common Cyrillic and Greek look-alikes mapped to the Latin letters they mimic."""
    return text if text.isascii() else deny_form(text).translate(_LOOKALIKES)


_CONTROL = re.compile(r"[\x00-\x1f]")


def has_invisible(text: str) -> bool:
    """Whether `text` holds control or format characters a reader would not see."""
    return (not text.isascii() and any(unicodedata.category(c) in ("Cf", "Cc") for c in text)) or (
        _CONTROL.search(text) is not None
    )


@dataclass(frozen=True, slots=True)
class CompiledPattern:
    """One path pattern as an anchored regex over absolute paths."""

    regex: str
    static_prefix: str
    """The longest directory before the first wildcard: what the pattern can reach."""


def compile_pattern(spec: str, *, cwd: str, home: str, settings_root: str) -> CompiledPattern:
    """Turn a rule's path specifier into a regex over absolute, normalised paths."""
    spec = spec.strip()
    if spec.startswith("//"):
        root, rest = "/", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        root, rest = home, spec[2:]
    elif spec.startswith("/"):
        root, rest = settings_root, spec[1:]
    else:
        root, rest = cwd, spec.removeprefix("./")
    rest = rest.rstrip("/")
    any_depth = "/" not in rest and rest not in ("", "**")
    while rest.endswith("/**"):
        rest = rest[:-3]  # "dir/**" covers the directory itself too: a search of it reads all
    if ".." in rest.split("/") or "." in rest.split("/"):
        rest = posixpath.normpath(f"{root}/{rest}").lstrip("/")
        root = "/"
    base = "/" + root.strip("/") if root.strip("/") else ""
    if not rest:
        return CompiledPattern(re.escape(base) + r"(?:/.*)?", base or "/")
    middle = r"/(?:.*/)?" if any_depth else "/"
    regex = re.escape(base) + middle + _translate(rest) + r"(?:/.*)?"
    static = base if any_depth else _static_prefix(base, rest)
    return CompiledPattern(regex, static or "/")


def _static_prefix(base: str, rest: str) -> str:
    parts: list[str] = []
    for part in rest.split("/")[:-1]:
        if _WILDCARDS & set(part):
            break
        parts.append(part)
    else:
        if not (_WILDCARDS & set(rest.split("/")[-1])):
            parts = rest.split("/")
    return "/".join([base, *parts]) if parts else base


def _translate(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(r".*")
            i += 2
        elif c == "*":
            out.append(r"[^/]*")
            i += 1
        elif c == "?":
            out.append(r"[^/]")
            i += 1
        elif c == "[" and (found := bracket(glob, i)) is not None:
            out.append(found[0])
            i = found[1]
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


class PathRuleSet(Generic[T]):
    """Many path patterns, indexed by their static prefix; answers which item matched first.

    With `folded`, patterns and paths are compared case-insensitively after NFKC
    normalisation — used for deny rules, so a look-alike or case variant is still caught.
    """

    def __init__(self, entries: Sequence[tuple[T, CompiledPattern]], *, folded: bool) -> None:
        flags = re.DOTALL | (re.IGNORECASE if folded else 0)
        self._folded = folded
        self._entries = [(item, c.static_prefix) for item, c in entries]
        self._patterns = tuple(entries)
        by_prefix: dict[str, list[tuple[int, T, re.Pattern[str]]]] = {}
        for index, (item, c) in enumerate(entries):
            compiled = re.compile(_fold_regex(c.regex, folded), flags)
            key = self._key(c.static_prefix.rstrip("/") or "/")
            by_prefix.setdefault(key, []).append((index, item, compiled))
        # For speed, each prefix holds its merged bucket: its own patterns, those of every
        # prefix above it and those of "/", in rule order. A lookup then stops at the
        # deepest prefix of the path that has patterns, and sorts nothing.
        self._root = _merged(by_prefix, ())
        self._merged = {key: _merged(by_prefix, _walk(key)) for key in by_prefix}
        # What each path matched (a pure function of the path string: the rules never
        # change); bounded, cleared when full.
        self._memo: dict[str, T | None] = {}

    def _key(self, path: str) -> str:
        return fold(path) if self._folded else path

    def __bool__(self) -> bool:
        return bool(self._entries)

    def patterns(self) -> tuple[tuple[T, CompiledPattern], ...]:
        """Every item with its compiled pattern, in rule order (for tools that enumerate)."""
        return self._patterns

    def match(self, paths: Iterable[str]) -> T | None:
        """The first item whose pattern matches any of `paths`.

        Only patterns whose static prefix is the path or one of its parents are tried.
        """
        if not self._entries:
            return None
        memo = self._memo
        for path in paths:
            found = memo.get(path, _MISS)
            if found is _MISS:
                found = self._match_path(path)
                if len(memo) >= MEMO_SIZE:
                    memo.clear()
                memo[path] = found
            if found is not None:
                return found
        return None

    def _match_path(self, path: str) -> T | None:
        subject = deny_form(path) if self._folded else path
        for item, pattern in self._bucket(self._key(subject)):
            if pattern.fullmatch(subject):
                return item
        return None

    def _bucket(self, key: str) -> tuple[tuple[T, re.Pattern[str]], ...]:
        """The patterns a path with this key may match: the merged bucket of its deepest
        prefix that has patterns (see `__init__`)."""
        merged = self._merged
        while key:
            bucket = merged.get(key)
            if bucket is not None:
                return bucket
            key = key[: key.rfind("/")]
        return self._root

    def reaching_tree(self, root: str) -> tuple[T | None, bool]:
        """What protects a path below the directory `root`.

        Returns (item, certain): a pattern whose static prefix lies inside `root` (certain),
        or, with certain False, one whose prefix holds `root` so that only the tree's contents
        can tell (a wildcard such as ``**/.env``).
        """
        maybe: T | None = None
        for item, prefix in self._entries:
            if is_inside(prefix, root) and prefix.rstrip("/") != root.rstrip("/"):
                return item, True
            if maybe is None and is_inside(root, prefix):
                maybe = item
        return maybe, False

    def reaches_into(self, glob: str) -> T | None:
        """An item whose pattern could match a path the absolute `glob` expands to.

        True when the glob expands inside what a pattern protects, or when it can match the
        protected directory, something inside it, or a parent of it (`can_reach`).
        """
        base = glob_base(glob)
        for item, prefix in self._entries:
            if is_inside(base, prefix):
                return item
            if is_inside(prefix, base) and can_reach(glob, prefix):
                return item
        return None


def glob_base(glob: str) -> str:
    """The directory an absolute shell glob expands under: its literal part, up to the last
    "/" before the first wildcard (``/a/b*/c`` → ``/a``; ``/a/b`` → ``/a``)."""
    cut = min((glob.index(c) for c in _WILDCARDS if c in glob), default=len(glob))
    return glob[:cut].rsplit("/", 1)[0] or "/"


def glob_shape(glob: str) -> re.Pattern[str]:
    """The absolute paths the shell glob `glob` could expand to, as a regular expression."""
    return re.compile(compile_pattern("/" + glob, cwd="/", home="/", settings_root="/").regex)


def _walk(key: str) -> Iterator[str]:
    """`key` and the shorter keys a lookup tries after it, cutting at each "/" in turn."""
    while key:
        yield key
        key = key[: key.rfind("/")]


def _merged(
    by_prefix: dict[str, list[tuple[int, T, re.Pattern[str]]]], keys: Iterable[str]
) -> tuple[tuple[T, re.Pattern[str]], ...]:
    """The patterns of `keys` and of "/", each once, in rule order."""
    found = {e[0]: e for key in (*keys, "/") for e in by_prefix.get(key, ())}
    return tuple((item, pattern) for _index, item, pattern in sorted(found.values(), key=_first))


def _first(entry: tuple[int, object, object]) -> int:
    return entry[0]


def _fold_regex(regex: str, folded: bool) -> str:
    return unicodedata.normalize("NFKC", regex) if folded else regex
