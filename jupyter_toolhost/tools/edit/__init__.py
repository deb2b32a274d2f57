"""Edit: replace an exact string in a file that was Read first, keeping encoding and endings."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolInputError
from .._files import (
    diff_snippet,
    read_text_file,
    require_fresh_read,
    require_regular_file,
    require_writable_parent,
    write_text_atomic,
)
from .prompt import DESCRIPTION, MAX_EDIT_BYTES, NAME


class EditInput(BaseModel):
    """Input of Edit."""

    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(description="The file to change: absolute, or relative to the cwd.")
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


def edit_file(input: EditInput, context: ToolUseContext) -> str:
    """Apply one exact-string replacement; raises `ToolInputError` when it cannot."""
    path = context.resolve_path(input.file_path)
    if input.old_string == input.new_string:
        raise ToolInputError("No changes to make: old_string and new_string are the same.")
    if input.old_string == "" and not path.exists():
        return _create(path, input.new_string, context)
    require_regular_file(path)
    require_fresh_read(context, path)
    size = path.stat().st_size
    if size > MAX_EDIT_BYTES:
        raise ToolInputError(
            f"{path} is {size // (1024 * 1024)} MB; Edit handles files up to "
            f"{MAX_EDIT_BYTES // (1024 * 1024)} MB."
        )
    try:
        original = read_text_file(path, context)
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot read {path}") from None
    old = input.old_string.replace("\r\n", "\n")
    new = input.new_string.replace("\r\n", "\n")
    if old == "":
        raise ToolInputError(f"{path} already exists; an empty old_string only creates new files.")
    count = original.text.count(old)
    if count == 0:
        raise ToolInputError(
            f"String to replace not found in {path}. Check whitespace and indentation, "
            "and Read the file again if unsure."
        )
    if count > 1 and not input.replace_all:
        raise ToolInputError(
            f"Found {count} matches of the string to replace in {path}, but replace_all is "
            "false. Add surrounding lines to make old_string unique, or set replace_all."
        )
    updated = (
        original.text.replace(old, new) if input.replace_all else original.text.replace(old, new, 1)
    )
    require_writable_parent(path)
    try:
        write_text_atomic(
            path, updated, encoding=original.encoding, newline=original.newline, context=context
        )
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot write {path}") from None
    context.read_file_state.record(path)
    replaced = f"{count} occurrences" if input.replace_all and count > 1 else "1 occurrence"
    return f"The file {path} has been updated ({replaced} replaced). Diff:\n" + diff_snippet(
        path, original.text, updated
    )


def _create(path: Path, content: str, context: ToolUseContext) -> str:
    if path.parent.exists():
        require_writable_parent(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, content.replace("\r\n", "\n"), context=context)
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot write {path}") from None
    context.read_file_state.record(path)
    return f"File created successfully at: {path}"


def _path_of(input: EditInput) -> str:
    return input.file_path


def make_tool() -> Tool[EditInput]:
    """A fresh Edit tool."""
    return build_tool(
        name=NAME,
        input_model=EditInput,
        call=edit_file,
        description=DESCRIPTION,
        read_only=False,
        concurrency_safe=False,
        get_path=_path_of,
        render_tool_use=_path_of,
        search_hint="edit replace change modify text in file",
    )


TOOL = make_tool()
