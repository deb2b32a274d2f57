"""Grep's two backends and its one formatter.

`rg_search` runs the ripgrep binary and parses its `--null` output; `python_search` walks
the tree with the same rules (`.._search`) and matches with `re`. Both return `FileHits`,
and `format_hits` alone turns those into text, so the two backends cannot drift apart in
how results look: files sorted by path (content, count) or newest first (file lists).
"""

from __future__ import annotations

import bisect
import math
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias, assert_never

import pathspec

from ...core.context import AbortSignal
from ...core.process import run_capture
from ...core.types import ToolInputError
from .._search import RG_COMMON_FLAGS, GlobFilter, WalkedFile, walk_files

OutputMode: TypeAlias = Literal["content", "files_with_matches", "count"]

MAX_RG_OUTPUT_BYTES = 20 * 1024 * 1024
MAX_LINE_CHARS = 2000
RG_TIMEOUT = 120.0

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "cpp": ("*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in",
            "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"),
    "css": ("*.css", "*.scss"),
    "csv": ("*.csv",),
    "go": ("*.go",),
    "html": ("*.ejs", "*.htm", "*.html"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "js": ("*.cjs", "*.js", "*.jsx", "*.mjs", "*.vue"),
    "json": ("*.json", "*.sarif", "composer.lock"),
    "jupyter": ("*.ipynb", "*.jpynb"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mdx", "*.mkd", "*.mkdn"),
    "py": ("*.py", "*.pyi"),
    "r": ("*.R", "*.Rmd", "*.Rnw", "*.r"),
    "rst": ("*.rst",),
    "rust": ("*.rs",),
    "sh": ("*.bash", "*.csh", "*.ksh", "*.sh", "*.tcsh", "*.zsh"),
    "sql": ("*.psql", "*.sql"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.cts", "*.mts", "*.ts", "*.tsx"),
    "txt": ("*.txt",),
    "yaml": ("*.yaml", "*.yml"),
}  # fmt: skip
"""ripgrep's definitions of the file types the Python fallback knows (`rg --type-list`)."""
FILE_TYPES["markdown"] = FILE_TYPES["md"]


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """One search, as both backends understand it."""

    pattern: str
    root: Path
    """A directory to search, or one file."""
    mode: OutputMode = "files_with_matches"
    ignore_case: bool = False
    before: int = 0
    after: int = 0
    multiline: bool = False
    globs: tuple[str, ...] = ()
    file_type: str | None = None


@dataclass(slots=True)
class FileHits:
    """What one file contributed: its matching (and context) lines, or its count."""

    path: str
    lines: list[tuple[int, bool, str]] = field(default_factory=list)
    """(line number, is a match, text) in file order; context lines have False."""
    count: int = 0


@dataclass(slots=True)
class SearchOutcome:
    """Hits plus whatever the caller should be told about how complete they are."""

    hits: list[FileHits]
    notes: list[str] = field(default_factory=list)


# ── ripgrep ───────────────────────────────────────────────────────────────────────────────


def rg_argv(rg: str, query: GrepQuery) -> list[str]:
    """The ripgrep command line for a query."""
    argv = [rg, *RG_COMMON_FLAGS, "--null", "--no-heading", "--with-filename"]
    match query.mode:
        case "files_with_matches":
            argv.append("--files-with-matches")
        case "count":
            argv.append("--count")
        case "content":
            argv += ["--line-number", f"--before-context={query.before}"]
            argv.append(f"--after-context={query.after}")
        case _:
            assert_never(query.mode)
    if query.ignore_case:
        argv.append("--ignore-case")
    if query.multiline:
        argv += ["--multiline", "--multiline-dotall"]
    argv += [f"--glob={glob}" for glob in query.globs]
    if query.file_type:
        argv.append(f"--type={query.file_type}")
    argv += ["--regexp", query.pattern, "--", str(query.root)]
    return argv


async def rg_search(rg: str, query: GrepQuery, *, abort: AbortSignal | None) -> SearchOutcome:
    """Search with the ripgrep binary."""
    # ripgrep matches globs against paths relative to its working directory: run it in root.
    cwd = query.root if query.root.is_dir() else query.root.parent
    result = await run_capture(
        rg_argv(rg, query),
        cwd=cwd,
        max_bytes=MAX_RG_OUTPUT_BYTES,
        time_limit=RG_TIMEOUT,
        abort=abort,
    )
    stderr = result.stderr.decode("utf-8", errors="replace").strip()
    if result.exit_code not in (0, 1) and not result.stdout and not result.truncated:
        raise ToolInputError(f"Grep failed: {stderr or f'rg exited {result.exit_code}'}")
    data = result.stdout
    outcome = SearchOutcome(hits=[])
    if result.truncated:
        data = data[: data.rfind(b"\n") + 1] if query.mode != "files_with_matches" else data
        outcome.notes.append(
            f"(ripgrep printed over {MAX_RG_OUTPUT_BYTES // (1024 * 1024)} MB; only that part "
            "is shown. Narrow the search with path, glob or type.)"
        )
    elif stderr and result.exit_code == 2:
        outcome.notes.append("(Some files could not be searched: " + stderr[:300] + ")")
    outcome.hits = _parse_rg(data.decode("utf-8", errors="replace"), query.mode)
    return outcome


def _parse_rg(text: str, mode: OutputMode) -> list[FileHits]:
    if mode == "files_with_matches":
        return [FileHits(path) for path in text.split("\0") if path]
    by_path: dict[str, FileHits] = {}
    for line in text.split("\n"):
        path, sep, rest = line.partition("\0")
        if not sep:
            continue  # "--" group separators and the final empty line
        hits = by_path.get(path)
        if hits is None:
            hits = by_path[path] = FileHits(path)
        if mode == "count":
            hits.count = int(rest)
            continue
        number, is_match, body = _split_numbered(rest)
        hits.lines.append((number, is_match, body))
        hits.count += is_match
    return list(by_path.values())


def _split_numbered(rest: str) -> tuple[int, bool, str]:
    digits = 0
    while digits < len(rest) and rest[digits].isdigit():
        digits += 1
    return int(rest[:digits]), rest[digits : digits + 1] == ":", rest[digits + 1 :]


# ── pure Python ──────────────────────────────────────────────────────────────────────────


def compile_pattern(query: GrepQuery) -> re.Pattern[str]:
    """The query's regex for Python; raises `ToolInputError` when it does not compile."""
    flags = re.IGNORECASE if query.ignore_case else 0
    if query.multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolInputError(f"Invalid regular expression {query.pattern!r}: {exc}") from None


def python_search(query: GrepQuery) -> SearchOutcome:
    """Search in pure Python, following ripgrep's rules (see the module docstring)."""
    regex = compile_pattern(query)
    outcome = SearchOutcome(hits=[])
    for path in _candidates(query):
        try:
            data = Path(path).read_bytes()
        except OSError:
            outcome.notes.append(f"(Could not read {path})")
            continue
        if b"\0" in data:
            continue
        hits = _search_text(path, data.decode("utf-8", errors="replace"), regex, query)
        if hits is not None:
            outcome.hits.append(hits)
    return outcome


def _candidates(query: GrepQuery) -> Iterable[str]:
    if query.root.is_file():
        return [str(query.root)]
    type_spec = _type_spec(query.file_type)
    globs = GlobFilter.of(query.globs)

    def wanted(found: WalkedFile) -> bool:
        if found.whitelisted or type_spec is None:
            return True
        return type_spec.match_file(found.relative)

    return (found.path for found in walk_files(query.root, globs=globs) if wanted(found))


def _type_spec(file_type: str | None) -> pathspec.PathSpec | None:
    if file_type is None:
        return None
    patterns = FILE_TYPES.get(file_type)
    if patterns is None:
        known = ", ".join(sorted(FILE_TYPES))
        raise ToolInputError(f"Unknown file type {file_type!r}. Known types: {known}")
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _search_text(path: str, text: str, regex: re.Pattern[str], query: GrepQuery) -> FileHits | None:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if query.multiline:
        matched = _multiline_matches(text, regex, len(lines))
    else:
        matched = [i for i, line in enumerate(lines) if regex.search(line)]
    if not matched:
        return None
    hits = FileHits(path, count=len(matched))
    if query.mode != "content":
        return hits
    wanted: dict[int, bool] = {}
    for index in matched:
        for near in range(
            max(index - query.before, 0), min(index + query.after, len(lines) - 1) + 1
        ):
            wanted.setdefault(near, False)
        wanted[index] = True
    hits.lines = [(i + 1, wanted[i], lines[i]) for i in sorted(wanted)]
    return hits


def _multiline_matches(text: str, regex: re.Pattern[str], line_count: int) -> list[int]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    matched: set[int] = set()
    for match in regex.finditer(text):
        first = bisect.bisect_right(starts, match.start()) - 1
        last = bisect.bisect_right(starts, max(match.end() - 1, match.start())) - 1
        matched.update(range(first, min(last, line_count - 1) + 1))
    return sorted(matched)


# ── formatting ───────────────────────────────────────────────────────────────────────────


def format_hits(
    outcome: SearchOutcome,
    *,
    mode: OutputMode,
    line_numbers: bool = True,
    context: bool = False,
    head_limit: int | None = None,
) -> str:
    """The text the model sees; the same for both backends."""
    hits = outcome.hits
    if mode == "files_with_matches":
        entries = [h.path for h in _newest_first(hits)]
        if not entries:
            return _with_notes("No files found", outcome.notes)
        shown, cut = _limit(entries, head_limit)
        header = f"Found {len(entries)} file{'s' if len(entries) != 1 else ''}"
        return _with_notes("\n".join([header, *shown, *cut]), outcome.notes)
    ordered = sorted(hits, key=lambda h: h.path)
    if mode == "count":
        entries = [f"{h.path}:{h.count}" for h in ordered]
        if not entries:
            return _with_notes("No matches found", outcome.notes)
        shown, cut = _limit(entries, head_limit)
        total = sum(h.count for h in ordered)
        footer = f"\nFound {total} matching lines in {len(ordered)} files."
        return _with_notes("\n".join([*shown, *cut]) + footer, outcome.notes)
    entries = _content_lines(ordered, line_numbers=line_numbers, context=context)
    if not entries:
        return _with_notes("No matches found", outcome.notes)
    shown, cut = _limit(entries, head_limit)
    return _with_notes("\n".join([*shown, *cut]), outcome.notes)


def _content_lines(hits: list[FileHits], *, line_numbers: bool, context: bool) -> list[str]:
    out: list[str] = []
    for hits_of_file in hits:
        previous: int | None = None
        for number, is_match, text in hits_of_file.lines:
            if context and out and (previous is None or number > previous + 1):
                out.append("--")
            previous = number
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + " … [line cut]"
            sep = ":" if is_match else "-"
            where = f"{hits_of_file.path}{sep}{number}" if line_numbers else hits_of_file.path
            out.append(f"{where}{sep}{text}")
    return out


def _limit(entries: list[str], head_limit: int | None) -> tuple[list[str], list[str]]:
    if head_limit is None or head_limit <= 0 or len(entries) <= head_limit:
        return entries, []
    note = f"(head_limit={head_limit}: showing {head_limit} of {len(entries)} entries)"
    return entries[:head_limit], ["", note]


STAT_CHUNK = 512
"""Files per thread when many hits are sorted by time (stat releases the GIL)."""
_stat_pool: ThreadPoolExecutor | None = None


def _mtimes(paths: list[str]) -> list[float]:
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime)
        except OSError:
            out.append(-math.inf)  # gone since the search: last
    return out


def _newest_first(hits: list[FileHits]) -> list[FileHits]:
    """Newest first, then by path. With thousands of hits the stat calls were a third of
    the tool's time past ripgrep's own: they run in chunks on a few threads."""
    global _stat_pool
    paths = [hit.path for hit in hits]
    if len(paths) <= STAT_CHUNK:
        times = _mtimes(paths)
    else:
        if _stat_pool is None:
            _stat_pool = ThreadPoolExecutor(min(8, os.cpu_count() or 1), "grep-stat")
        chunks = [paths[i : i + STAT_CHUNK] for i in range(0, len(paths), STAT_CHUNK)]
        times = [t for part in _stat_pool.map(_mtimes, chunks) for t in part]
    order = sorted(range(len(hits)), key=lambda i: (-times[i], paths[i]))
    return [hits[i] for i in order]


def _with_notes(text: str, notes: list[str]) -> str:
    return "\n".join([text, "", *notes]) if notes else text
