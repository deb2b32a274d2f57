"""What a request carries besides the conversation: the system prompt and tool definitions.

The system prompt is a short base prompt with the working directory, then each tool's
`prompt()` text. Tools are sent with `tool.to_api()` (their schema, `strict` where they say
so). Prompt caching breakpoints (`cache_control: ephemeral`) go on the system prompt's last
block and on the last tool definition, so everything before the conversation is cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.conversation import Block, text_block
from ..core.tool import Tool
from ..orchestration.pipeline import is_enabled

EPHEMERAL = {"type": "ephemeral"}
BASE_PROMPT = (
    "You are an agent working in a Jupyter kernel through jupyter_toolhost. Use the tools "
    "to inspect and change files; paths are absolute or relative to the working directory. "
    "Run independent read-only calls together in one message. Be concise.\n\n"
    "Working directory: {cwd}"
)


def enabled_tools(tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
    """The tools whose `is_enabled()` says yes (one that raises is left out)."""
    return [tool for tool in tools if is_enabled(tool)]


def system_prompt(tools: Sequence[Tool[Any]], cwd: Path) -> list[Block]:
    """The system blocks, the last one marked for caching."""
    blocks = [text_block(BASE_PROMPT.format(cwd=cwd))]
    guidance = [f"## {t.name}\n{t.prompt().strip()}" for t in tools if t.prompt().strip()]
    if guidance:
        blocks.append(text_block("# Tools\n\n" + "\n\n".join(guidance)))
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return blocks


def tool_definitions(tools: Sequence[Tool[Any]]) -> list[dict[str, Any]]:
    """The `tools` array, the last definition marked for caching."""
    return cache_last([tool.to_api() for tool in tools])


def cache_last(definitions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of the `tools` array with a cache breakpoint on the last tool of the cached
    prefix: the last one without `defer_loading` (deferred tools are not in the prefix)."""
    marked = list(definitions)
    for index in range(len(marked) - 1, -1, -1):
        if not marked[index].get("defer_loading"):
            marked[index] = {**marked[index], "cache_control": EPHEMERAL}
            break
    return marked


def announce(messages: list[dict[str, Any]], text: str) -> None:
    """Add `text` (an attachment such as the deferred-tools list) to the last user message,
    after any tool_result blocks, where the API accepts it."""
    if not messages or messages[-1].get("role") != "user":
        messages.append({"role": "user", "content": [text_block(text)]})
        return
    last = messages[-1]
    content = last["content"]
    blocks = [text_block(content)] if isinstance(content, str) else list(content)
    messages[-1] = {**last, "content": [*blocks, text_block(text)]}
