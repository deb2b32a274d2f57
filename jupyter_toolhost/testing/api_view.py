"""What the Messages API makes of a request's deferred tools, for the loopback server.

A tool sent with ``"defer_loading": true`` is not part of the prompt: the API adds its
definition where a `tool_reference` block names it (a ToolSearch tool_result, or the
result of the API's own tool search), and until then the model cannot see or call it.
These functions answer, for one request body: which tools the model sees
(`visible_tool_names`), what the cached prefix is (`cached_prefix`: the system prompt and
every tool without `defer_loading`, in order), and how many bytes count as input
(`billed_bytes`: the body without the deferred tools nothing references yet, and with each
image counted as the API bills it, width × height / 750 tokens at the size the model sees,
not by the length of its base64 text).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.images import image_size, image_tokens

__all__ = ["billed_bytes", "cached_prefix", "referenced_tool_names", "visible_tool_names"]


def _tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = body.get("tools")
    return [t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []


def _deferred(tool: Mapping[str, Any]) -> bool:
    return tool.get("defer_loading") is True


def _blocks_of(value: Any, kind: str) -> Iterable[Mapping[str, Any]]:
    """Every block of type `kind` anywhere in `value` (not looked into)."""
    if isinstance(value, Mapping):
        if value.get("type") == kind:
            yield value
            return
        for inner in value.values():
            if isinstance(inner, list | Mapping):
                yield from _blocks_of(inner, kind)
    elif isinstance(value, list):
        for item in value:
            yield from _blocks_of(item, kind)


def referenced_tool_names(body: Mapping[str, Any]) -> set[str]:
    """Names that `tool_reference` blocks anywhere in the messages point at."""
    blocks = _blocks_of(body.get("messages", []), "tool_reference")
    return {block["tool_name"] for block in blocks if isinstance(block.get("tool_name"), str)}


def visible_tool_names(body: Mapping[str, Any]) -> set[str]:
    """Tools the model can see and call: those without `defer_loading`, plus the deferred
    ones a `tool_reference` has loaded."""
    referenced = referenced_tool_names(body)
    return {
        str(tool.get("name"))
        for tool in _tools(body)
        if not _deferred(tool) or tool.get("name") in referenced
    }


def cached_prefix(body: Mapping[str, Any]) -> bytes:
    """The part of the request that a prompt-cache hit needs unchanged: the system prompt
    and the tools without `defer_loading`, serialised canonically."""
    prefix = {
        "system": body.get("system"),
        "tools": [tool for tool in _tools(body) if not _deferred(tool)],
    }
    return json.dumps(prefix, sort_keys=True, separators=(",", ":")).encode()


def _image_overcount(body: Mapping[str, Any]) -> int:
    """Bytes of base64 image text beyond what the images are billed as (their tokens × 4)."""
    extra = 0
    for block in _blocks_of(body.get("messages", []), "image"):
        size = image_size(dict(block))
        source = block.get("source")
        if size is not None and isinstance(source, Mapping):
            extra += len(str(source.get("data", ""))) - 4 * image_tokens(*size)
    return extra


def billed_bytes(body: Mapping[str, Any], raw: bytes) -> int:
    """The body's bytes less the definitions of deferred tools nothing has referenced
    (the API does not count those as input), with images counted at their billed size."""
    referenced = referenced_tool_names(body)
    unused = sum(
        len(json.dumps(tool).encode())
        for tool in _tools(body)
        if _deferred(tool) and tool.get("name") not in referenced
    )
    return max(0, len(raw) - unused - _image_overcount(body))
