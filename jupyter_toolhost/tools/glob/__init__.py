"""Glob: file names by pattern, newest first, respecting .gitignore, capped with a note."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.process import run_capture
from ...core.tool import Tool, build_tool
from ...core.types import ToolInputError
from ...permissions.engine import read_denied, reads_withheld_under
from .._search import RG_COMMON_FLAGS, GlobFilter, rg_binary, walk_files
from .prompt import DESCRIPTION, MAX_RESULTS, NAME

_GLOB_CHARS = frozenset("*?[{")
RG_TIMEOUT = 60.0
EXCLUDED = ("!.git", "!.toolhost")
"""Never listed: git's database and the tool host's own session state."""


class GlobInput(BaseModel):
    """Input of Glob."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description='The glob pattern, e.g. "**/*.py".')
    path: str | None = Field(
        default=None, description="The directory to search (default: the working directory)."
    )


def split_pattern(root: Path, pattern: str) -> tuple[Path, str]:
    """Move an absolute pattern's literal leading directories into the root."""
    if not os.path.isabs(pattern):
        return root, pattern.removeprefix("./")
    parts = Path(pattern).parts
    literal = 0
    while literal < len(parts) - 1 and not _GLOB_CHARS.intersection(parts[literal]):
        literal += 1
    # A leading "/" anchors the rest at the new root, as the absolute pattern meant.
    return Path(*parts[:literal]), "/" + "/".join(parts[literal:])


def python_glob(root: Path, pattern: str) -> list[str]:
    """Matching files under `root` (absolute paths, unsorted), in pure Python."""
    walked = walk_files(root, hidden=True, globs=GlobFilter.of([pattern, *EXCLUDED]))
    return [str(root / found.relative) for found in walked]


async def rg_glob(rg: str, root: Path, pattern: str, context: ToolUseContext) -> list[str]:
    """Matching files under `root` (absolute paths, unsorted), by `rg --files`."""
    argv = [rg, *RG_COMMON_FLAGS, "--files", "--hidden", "--null"]
    # The last matching --glob wins in ripgrep: the exclusions come after the pattern.
    argv += [f"--glob={pattern}", *(f"--glob={glob}" for glob in EXCLUDED), "--", str(root)]
    # ripgrep matches globs against paths relative to its working directory: run it in root.
    result = await run_capture(
        argv, cwd=root, max_bytes=256 * 1024 * 1024, time_limit=RG_TIMEOUT, abort=context.abort
    )
    if result.exit_code not in (0, 1) and not result.stdout:
        message = result.stderr.decode("utf-8", errors="replace").strip()
        raise ToolInputError(f"Glob failed: {message or f'rg exited {result.exit_code}'}")
    return [p for p in result.stdout.decode("utf-8", errors="replace").split("\0") if p]


def newest_first(paths: list[str]) -> list[str]:
    """Sort by modification time, newest first; ties (and vanished files) by path."""

    def key(path: str) -> tuple[float, str]:
        try:
            return (-os.stat(path).st_mtime, path)
        except OSError:
            return (0.0, path)

    return sorted(paths, key=key)


async def glob_files(input: GlobInput, context: ToolUseContext) -> str:
    """Find files matching the pattern; the text lists them newest first."""
    base = context.resolve_path(input.path) if input.path else context.cwd
    if not base.exists():
        raise ToolInputError(f"Directory does not exist: {base}")
    if not base.is_dir():
        raise ToolInputError(f"{base} is not a directory; `path` must be a directory.")
    root, pattern = split_pattern(base, input.pattern)
    if not pattern:
        raise ToolInputError("The pattern is empty.")
    rg = rg_binary()
    if rg is not None:
        found = await rg_glob(rg, root, pattern, context)
    else:
        found = await asyncio.to_thread(python_glob, root, pattern)
    hidden = read_denied(context)
    kept = [p for p in found if not hidden(os.path.join(root, p))]
    note = WITHHELD_NOTE if reads_withheld_under(context, os.fspath(root)) else ""
    if not kept:
        return "\n".join(filter(None, ("No files found", note)))
    ordered = newest_first(kept)
    shown = ordered[:MAX_RESULTS]
    text = "\n".join(shown)
    if len(ordered) > MAX_RESULTS:
        text += (
            f"\n(Results are truncated: showing {MAX_RESULTS} of {len(ordered)} files. "
            "Use a more specific path or pattern.)"
        )
    return f"{text}\n{note}" if note else text


WITHHELD_NOTE = "(Paths a Read deny rule protects are left out, whether they match or not.)"
"""Decided by the rules alone, so it does not tell which denied names exist."""


def _path_of(input: GlobInput) -> str:
    return input.path or "."


def _summary(input: GlobInput) -> str:
    return f"{input.pattern} in {input.path}" if input.path else input.pattern


def make_tool() -> Tool[GlobInput]:
    """A fresh Glob tool."""
    return build_tool(
        name=NAME,
        input_model=GlobInput,
        call=glob_files,
        description=DESCRIPTION,
        read_only=True,
        concurrency_safe=True,
        get_path=_path_of,
        render_tool_use=_summary,
        search_hint="find files by name pattern glob list directory",
    )


TOOL = make_tool()
