"""How a card names a call, which language its result is in, and which code it runs: read
from the session's tools (their `display_name`, `summarize`, `is_read_only` and `code_of`),
never from a tool's name."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.text import one_line
from ...core.tool import SUMMARY_CHARS
from .cards import language_of_path

if TYPE_CHECKING:
    from ...core.tool import Tool


class CallViews:
    """The card-facing views of calls, for the tools `tools()` returns (None: no session)."""

    def __init__(self, tools: Callable[[], list[Tool[Any]] | None]) -> None:
        self._tools = tools

    def describe(self, tool_name: str, raw_input: Any) -> tuple[str, str]:
        """(display name, one-line summary) of a call, for cards."""
        tools = {t.name: t for t in (self._tools() or [])}
        found = tools.get(tool_name)
        if found is not None and isinstance(raw_input, dict):
            try:
                parsed = found.input_model.model_validate(raw_input)
                return found.display_name(parsed), found.summarize(parsed)
            except Exception:
                pass
        text = json.dumps(raw_input, ensure_ascii=False, default=str) if raw_input else ""
        return tool_name, one_line(text, SUMMARY_CHARS)

    def language(self, tool_name: str, raw_input: Any) -> str | None:
        """The language of a call's result: the extension of the file a read-only tool
        reads (`file_path`), when it names one we know."""
        tool = {t.name: t for t in (self._tools() or [])}.get(tool_name)
        if tool is None or not isinstance(raw_input, dict):
            return None
        path = raw_input.get("file_path")
        if not isinstance(path, str):
            return None
        try:
            read_only = bool(tool.is_read_only(tool.input_model.model_validate(raw_input)))
        except Exception:
            return None
        if not read_only:
            return None

        return language_of_path(path)

    def code(self, tool_name: str, raw_input: Any) -> tuple[str, str, bool] | None:
        """(language, source, insertable) of the code a call runs, as its tool declares it
        (`render_code`); Python code can become a cell of this kernel's notebook as is."""
        tool = {t.name: t for t in (self._tools() or [])}.get(tool_name)
        if tool is None or not isinstance(raw_input, dict):
            return None
        try:
            code = tool.code_of(tool.input_model.model_validate(raw_input))
        except Exception:
            return None
        if code is None:
            return None
        language, source = code
        return language, source, language == "python"
