"""The built-in tools, one package each, their prompt text beside the implementation.

`builtin_tools()` returns fresh instances of the default pool; `Session()` without `tools`
uses it. Shared helpers: `_files` (encodings, line endings, atomic writes, read-before-edit
checks), `_search` (ripgrep location and its file rules, for Glob and Grep). Subprocesses
go through `jupyter_toolhost.process`.
"""

from __future__ import annotations

from typing import Any

from ..tool import Tool


def builtin_tools() -> list[Tool[Any]]:
    """Fresh instances of the default tool pool, in the order they are offered."""
    from . import bash, edit, glob, grep, notebook_edit, read, sleep, web_fetch, web_search, write

    tools: list[Tool[Any]] = [
        read.make_tool(),
        write.make_tool(),
        edit.make_tool(),
        glob.make_tool(),
        grep.make_tool(),
        bash.make_tool(),
        notebook_edit.make_tool(),
        web_fetch.make_tool(),
        web_search.make_tool(),
        sleep.make_tool(),
    ]
    # Other built-in tools join the pool here, each from its own package's make_tool():
    # Agent, TodoWrite, ToolSearch, the task tools (TaskGet/TaskStop/TaskOutput), ...
    return tools


__all__ = ["builtin_tools"]
