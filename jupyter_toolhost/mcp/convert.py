"""Turning an MCP server's tools into `Tool`s, and their results into tool_result content.

An MCP tool becomes ``mcp__<server>__<tool>``: its JSON schema goes to the API unchanged
(`input_schema_override`) and input is checked by a permissive model (the server validates
for real). It is deferred unless its server says `alwaysLoad`. Annotations map to flags:
``read_only_hint`` → read-only and concurrency-safe, ``destructive_hint`` → destructive;
no annotation means neither (fail closed). The permission engine trusts ``read_only_hint``
only for a server configured with ``trustAnnotations`` (the tool's `annotations_trusted`
field): otherwise an MCP call asks unless a rule allows it. Results: text stays text, images
become image blocks, embedded resources become text (or an image, or a note for other binary data),
resource links a line of text; ``isError`` raises `ToolError` so the pipeline reports it.
A server's ``notifications/progress`` for a call become the call's `Progress`.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol

import mcp_types
from mcp.shared.dispatcher import ProgressFnT
from pydantic import BaseModel, ConfigDict

from ..core.context import Progress, ToolUseContext
from ..core.tool import McpName, Tool, build_tool
from ..core.types import ContentBlock, ToolError
from .naming import fit_schema, restore_arguments

MAX_NAME = 128
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpToolInput(BaseModel):
    """Accepts any JSON object; the MCP server validates against its own schema."""

    model_config = ConfigDict(extra="allow")


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters the API refuses replaced by '_' (for one
    tool alone; `naming.tool_names` makes a server's names unique)."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    return name[:MAX_NAME]


def api_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The server's input schema as the API wants it: an object schema."""
    result = dict(schema or {})
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


def _annotation(tool: mcp_types.Tool, field: str) -> bool:
    annotations = tool.annotations
    return bool(annotations is not None and getattr(annotations, field, None) is True)


ProgressFn = ProgressFnT
"""The SDK's progress callback: (progress, total, message) of a `notifications/progress`."""


class CallFn(Protocol):
    """Sends one call to the server: (MCP tool name, arguments) → `CallToolResult`; the
    server's progress notifications for it go to `progress`."""

    def __call__(
        self, name: str, arguments: dict[str, Any], /, *, progress: ProgressFn | None = None
    ) -> Awaitable[mcp_types.CallToolResult]: ...


def progress_reporter(context: ToolUseContext) -> ProgressFn | None:
    """A progress callback that reports the server's progress notifications as the call's
    `Progress` (its message as text, progress/total as the fraction when total is known)."""
    report = context.progress
    if report is None:
        return None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        fraction = None
        if total:
            fraction = min(1.0, max(0.0, float(progress) / float(total)))
        report(Progress(text=message or "", fraction=fraction))

    return on_progress


def build_mcp_tool(
    server: str,
    tool: mcp_types.Tool,
    call: CallFn,
    *,
    always_load: bool = False,
    name: str | None = None,
    trust_annotations: bool = False,
    configured_server: str | None = None,
) -> Tool[McpToolInput]:
    """A `Tool` that forwards calls to the server's tool through `call`. `name` is the name
    the model sees (default: `mcp_tool_name`); `server` is the server as tool names name it
    and `configured_server` its name in the settings, when it was renamed (`naming`); the
    tool keeps both, with its own name, in `mcp_name`. Property keys the API refuses are renamed in
    the schema and back in each call's arguments (`naming.fit_schema`, which raises
    `UnmappableSchema` when that cannot be done). Its ``readOnlyHint`` makes it
    concurrency-safe; it counts for permissions only with `trust_annotations`."""
    read_only = _annotation(tool, "read_only_hint")
    remote_name = tool.name
    schema, key_map = fit_schema(api_schema(tool.input_schema))

    async def run(input: McpToolInput, context: ToolUseContext) -> list[ContentBlock]:
        arguments = restore_arguments(dict(input.model_extra or {}), key_map)
        result = await call(remote_name, arguments, progress=progress_reporter(context))
        return convert_result(result)

    title = tool.annotations.title if tool.annotations and tool.annotations.title else None
    description = (tool.description or "").strip() or title or f"{remote_name} ({server})"
    full_name = name or mcp_tool_name(server, tool.name)
    prefix = f"mcp__{_UNSAFE.sub('_', server)}__"
    names = McpName(
        server=server,
        tool=full_name.removeprefix(prefix),
        configured_server=configured_server or server,
        remote_tool=remote_name,
    )
    return build_tool(
        name=full_name,
        input_model=McpToolInput,
        call=run,
        description=description,
        read_only=read_only,
        concurrency_safe=read_only,
        destructive=_annotation(tool, "destructive_hint"),
        should_defer=True,
        always_load=always_load,
        user_facing_name=f"{configured_server or server} - {title or remote_name} (MCP)",
        is_mcp=True,
        mcp_name=names,
        annotations_trusted=trust_annotations,
        input_schema_override=schema,
        extras={"mcp_server": server, "mcp_tool": remote_name},
    )


def listed_tools(servers: Iterable[Mapping[str, Any]]) -> list[Tool[Any]]:
    """Deferred tools from a saved listing of MCP servers (``{"name", "tools": [{"name",
    "description", "inputSchema", "annotations"}]}`` each), for ranking and size
    measurements without starting the servers; calling one returns nothing."""
    return [
        build_tool(
            name=mcp_tool_name(server["name"], spec["name"]),
            input_model=McpToolInput,
            call=lambda _input, _context: "",
            description=spec["description"],
            input_schema_override=spec["inputSchema"],
            read_only=bool(spec.get("annotations", {}).get("readOnlyHint")),
            should_defer=True,
            is_mcp=True,
        )
        for server in servers
        for spec in server["tools"]
    ]


def resource_block(resource: Any) -> ContentBlock:
    """One resource's contents as a content block: its text, an image, or a note on a blob."""
    uri = str(getattr(resource, "uri", ""))
    mime = getattr(resource, "mime_type", None) or ""
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return {"type": "text", "text": f"[resource {uri}]\n{text}"}
    blob = getattr(resource, "blob", None)
    if isinstance(blob, str) and mime.startswith("image/"):
        return _image(blob, mime)
    size = len(base64.b64decode(blob, validate=False)) if isinstance(blob, str) else 0
    return {
        "type": "text",
        "text": f"[binary resource {uri} ({mime or 'unknown type'}, {size} bytes) not shown]",
    }


def _image(data: str, mime: str) -> ContentBlock:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def convert_block(block: Any) -> ContentBlock:
    """One MCP content block as an API content block."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "image":
        # Any image: the pipeline reads its type from its bytes, converts what Pillow can
        # read, and scales it (`images.fit_content`); what it cannot read becomes a note.
        return _image(block.data, block.mime_type)
    if kind == "audio":
        return {"type": "text", "text": f"[audio ({block.mime_type}) not shown]"}
    if kind == "resource":
        return resource_block(block.resource)
    if kind == "resource_link":
        described = f": {block.description}" if getattr(block, "description", None) else ""
        return {"type": "text", "text": f"[resource link {block.uri} ({block.name}){described}]"}
    return {"type": "text", "text": f"[unsupported MCP content of type {kind!r}]"}


def convert_result(result: mcp_types.CallToolResult) -> list[ContentBlock]:
    """A `CallToolResult` as tool_result content; an `isError` result raises `ToolError`."""
    blocks = [convert_block(block) for block in result.content]
    if not blocks and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, indent=2, default=str)
        blocks = [{"type": "text", "text": text}]
    if result.is_error:
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        raise ToolError(text or "The MCP tool reported an error without a message.")
    return blocks
