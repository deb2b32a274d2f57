"""The built-in tools, one package each, their prompt text beside the implementation.

`builtin_tools()` returns fresh instances of the default pool; `Session()` without `tools`
uses it. `deferred_tool_finder()` is the tool a session adds to any pool while a tool in it
is deferred (ToolSearch). A session reaches the tools only through these two and the flags
and hooks each tool declares (`core.tool.Tool`), never into a tool's own modules.

Shared helpers: `_files` (encodings, line endings, atomic writes, read-before-edit checks),
`_search` (ripgrep location and its file rules, for Glob and Grep). Subprocesses go through
`jupyter_toolhost.core.process`.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.tool import Tool


def builtin_tools(
    *, cwd: str | os.PathLike[str] | None = None, web_search: Any = None
) -> list[Tool[Any]]:
    """Fresh instances of the default tool pool, in the order they are offered.

    `cwd` is the session's working directory (the Skill tool lists the skills found there);
    `web_search` a search backend for WebSearch (a session on the Messages API gives the
    server-side search tool's; without one WebSearch stays disabled).
    ToolSearch is not in the list: the loop adds it while any tool is deferred.
    """
    from . import (
        agent,
        ask_user,
        bash,
        cron,
        edit,
        glob,
        grep,
        notebook_edit,
        plan_mode,
        read,
        send_message,
        skill,
        sleep,
        tasks,
        team,
        todo_write,
        web_fetch,
        worktree,
        write,
    )
    from . import (
        web_search as web_search_tool,
    )

    tools: list[Tool[Any]] = [
        read.make_tool(),
        write.make_tool(),
        edit.make_tool(),
        glob.make_tool(),
        grep.make_tool(),
        bash.make_tool(),
        notebook_edit.make_tool(),
        web_fetch.make_tool(),
        web_search_tool.make_tool(backend=web_search),
        sleep.make_tool(),
    ]
    tools += [
        agent.make_tool(),
        send_message.make_tool(),
        todo_write.make_tool(),
        *tasks.make_tools(),
        *plan_mode.make_tools(),
        skill.make_tool(cwd=cwd),
        *worktree.make_tools(),
        *cron.make_tools(),
        *team.make_tools(),
        ask_user.make_tool(),
    ]
    return tools


def deferred_tool_finder() -> Tool[Any]:
    """ToolSearch: what finds deferred tools (`disclosure.with_finder` adds it to a pool)."""
    from .tool_search import TOOL

    return TOOL


__all__ = ["builtin_tools", "deferred_tool_finder"]
