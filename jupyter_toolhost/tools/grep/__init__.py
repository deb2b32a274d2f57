"""Grep: ripgrep semantics, through the `rg` binary when there is one, else pure Python.

A path that is a link is searched at its target, checked again when the search starts; hits
in files a Read deny protects are dropped, and the note that says so depends on the rules
alone (`WITHHELD_NOTE`). Left open: a file swapped for a link in the instant between
ripgrep's directory listing and its open of that file.

Input field names are Claude Code's, dashes included (`-i`, `-n`, `-A`, `-B`, `-C`); the
pydantic model maps them to Python names with aliases.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from ...permissions.engine import nothing_hidden, read_denied, reads_withheld_under
from .._search import rg_binary
from .engine import (
    GrepQuery,
    OutputMode,
    SearchOutcome,
    format_hits,
    python_search,
    rg_search,
)
from .prompt import DESCRIPTION, NAME

MAX_RESULT_CHARS = 20_000


class GrepInput(BaseModel):
    """Input of Grep."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The regular expression to search for.")
    path: str | None = Field(
        default=None, description="File or directory to search (default: working directory)."
    )
    glob: str | None = Field(default=None, description='Only files matching, e.g. "*.py".')
    type: str | None = Field(default=None, description="Only files of a type: py, js, md, ...")
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"content" (lines), "files_with_matches" (paths) or "count".',
    )
    case_insensitive: bool = Field(default=False, alias="-i", description="Ignore case.")
    line_numbers: bool = Field(
        default=True, alias="-n", description="Show line numbers (content mode)."
    )
    after: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines after each match (content mode)."
    )
    before: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines before each match (content mode)."
    )
    around: int | None = Field(
        default=None, ge=0, alias="-C", description="Lines around each match (content mode)."
    )
    multiline: bool = Field(
        default=False, description="Let patterns span lines; `.` matches newlines."
    )
    head_limit: int | None = Field(
        default=None, ge=0, description="Keep only the first N lines or entries."
    )


def query_of(input: GrepInput, context: ToolUseContext) -> GrepQuery:
    """The backend-neutral query for a tool input; checks that the path exists."""
    root = context.resolve_path(input.path) if input.path else context.cwd
    if not root.exists():
        raise ToolInputError(f"Path does not exist: {root}")
    real = os.path.realpath(root)
    if real != os.path.abspath(root):
        # Search the target the check resolved, checked again now: a link swapped since
        # the check must not lead the search somewhere else.
        if read_denied(context)(real):
            raise ToolError(
                f"{root} was not searched: it now leads to {real}, which a Read deny rule "
                "protects (its symlink resolution changed after permission was checked)"
            )
        root = Path(real)
    content = input.output_mode == "content"
    around = input.around or 0
    return GrepQuery(
        pattern=input.pattern,
        root=root,
        mode=input.output_mode,
        ignore_case=input.case_insensitive,
        before=(input.before if input.before is not None else around) if content else 0,
        after=(input.after if input.after is not None else around) if content else 0,
        multiline=input.multiline,
        globs=(input.glob,) if input.glob else (),
        file_type=input.type,
    )


async def grep(input: GrepInput, context: ToolUseContext) -> str:
    """Run one search and format it."""
    query = query_of(input, context)
    rg = rg_binary()
    if rg is not None:
        outcome = await rg_search(rg, query, abort=context.abort)
    else:
        outcome = await asyncio.to_thread(python_search, query)
    withhold(outcome, query.root, read_denied(context))
    if reads_withheld_under(context, os.fspath(query.root)):
        outcome.notes.append(WITHHELD_NOTE)
    return format_hits(
        outcome,
        mode=query.mode,
        line_numbers=input.line_numbers,
        context=query.before > 0 or query.after > 0,
        head_limit=input.head_limit,
    )


WITHHELD_NOTE = (
    "(Files a Read deny rule protects are not searched: they are left out of these results, "
    "whether they match or not.)"
)
"""The same words whatever the denied files hold: a note that said whether one matched would
tell their contents one guess at a time."""


def withhold(outcome: SearchOutcome, root: Path, hidden: Callable[[str], bool]) -> None:
    """Drop the hits in files a Read deny protects (the note is the caller's: it depends on
    the rules alone)."""
    if hidden is nothing_hidden:
        return
    outcome.hits = [h for h in outcome.hits if not hidden(os.path.join(root, h.path))]


def _path_of(input: GrepInput) -> str:
    return input.path or "."


def _summary(input: GrepInput) -> str:
    where = f" in {input.path}" if input.path else ""
    return f'"{input.pattern}"{where}'


def make_tool() -> Tool[GrepInput]:
    """A fresh Grep tool."""
    return build_tool(
        name=NAME,
        input_model=GrepInput,
        call=grep,
        description=DESCRIPTION,
        max_result_size_chars=MAX_RESULT_CHARS,
        read_only=True,
        concurrency_safe=True,
        get_path=_path_of,
        render_tool_use=_summary,
        search_hint="search file contents regex ripgrep grep find text",
    )


TOOL = make_tool()
