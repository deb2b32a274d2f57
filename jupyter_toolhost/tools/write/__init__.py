"""Write: create a file or replace it whole, atomically, keeping encoding and line endings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolInputError
from .._files import (
    TextFile,
    diff_snippet,
    read_text_file,
    require_fresh_read,
    require_writable_parent,
    write_text_atomic,
)
from .prompt import DESCRIPTION, NAME


class WriteInput(BaseModel):
    """Input of Write."""

    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(description="The file to write: absolute, or relative to the cwd.")
    content: str = Field(description="The whole new content of the file.")


def write_file(input: WriteInput, context: ToolUseContext) -> str:
    """Create or overwrite one file; refuses an existing file that was not Read first."""
    path = context.resolve_path(input.file_path)
    if path.is_dir():
        raise ToolInputError(f"{path} is a directory, not a file.")
    existing: TextFile | None = None
    if path.exists():
        require_fresh_read(context, path, verb="write")
        try:
            existing = read_text_file(path, context)
        except PermissionError:
            raise ToolInputError(f"Permission denied: cannot read {path}") from None
    require_writable_parent(path)
    content = input.content.replace("\r\n", "\n")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if existing is None:
            write_text_atomic(path, content, context=context)
        else:
            write_text_atomic(
                path,
                content,
                encoding=existing.encoding,
                newline=existing.newline,
                context=context,
            )
    except PermissionError:
        raise ToolInputError(f"Permission denied: cannot write {path}") from None
    context.read_file_state.record(path)
    if existing is None:
        return f"File created successfully at: {path}"
    snippet = diff_snippet(path, existing.text, content)
    if not snippet:
        return f"{path} was written; its content did not change."
    return f"The file {path} has been updated. Diff:\n{snippet}"


def _path_of(input: WriteInput) -> str:
    return input.file_path


def make_tool() -> Tool[WriteInput]:
    """A fresh Write tool."""
    return build_tool(
        name=NAME,
        input_model=WriteInput,
        call=write_file,
        description=DESCRIPTION,
        read_only=False,
        concurrency_safe=False,
        get_path=_path_of,
        render_tool_use=_path_of,
        search_hint="write create save overwrite file",
    )


TOOL = make_tool()
