"""Which tools go into each request's `tools` array, and what the model is told about the rest.

A tool is deferred when it says `should_defer=True` and not `always_load=True` (which wins).
Deferred tools stay out of `tools` until the model discovers them: ToolSearch answers with
`tool_reference` blocks, `extract_discovered_tool_names()` finds those in the history (and in
compact-boundary metadata, so discoveries survive compaction), and from the next request on
the discovered tools are loaded. A loop keeps that set with `DiscoveredTools`, which reads
only the messages added or edited since its last request, not the whole history per turn.
The model learns which deferred tools exist from an attachment text; after the first
request only changes to that set are announced (an MCP server connected or went away).
`DisclosureState` remembers what was announced.

Two styles:

- ``"defer_loading"`` (the Messages API's own deferral): a deferred tool travels with
  ``"defer_loading": true`` once found, and the API expands the `tool_reference` blocks
  where they stand in the history. Such tools are not part of the cached prompt prefix, so
  a discovery leaves the system prompt and every tool without the flag byte-identical and
  the prompt cache keeps hitting. Only found tools are sent (as Claude Code does), plus one
  tiny deferred placeholder from the first request on, so the request shape (with deferral
  on) is the same before and after the first discovery. With the API's server-side search
  (`server_search`) every deferred tool is sent, since the API searches among them.
- ``"discovered"``: a found tool is added to `tools` like any other. Works with any endpoint
  (scripted models, replays of cassettes recorded this way), but a discovery changes the
  `tools` array, which is part of the cached prefix.

`resolve_disclosure()` turns the user's option (``auto`` and the rest of
`DISCLOSURE_OPTIONS`) into a style for a given model: ``auto`` takes ``defer_loading`` when
the model says its endpoint expands `tool_reference` blocks (`supports_defer_loading`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.history import MessageList, Watch
from ..core.tool import Tool
from ..core.types import DISCLOSURE_OPTIONS as DISCLOSURE_OPTIONS

DisclosureStyle = Literal["discovered", "defer_loading"]
ServerSearch = Literal["bm25", "regex"]
DisclosureOption = Literal["auto", "defer_loading", "discovered", "server_bm25", "server_regex"]

PLACEHOLDER_NAME = "deferred_tools_placeholder"
PLACEHOLDER: dict[str, Any] = {
    "name": PLACEHOLDER_NAME,
    "description": "Not a tool: keeps deferred loading on until a deferred tool is found.",
    "input_schema": {"type": "object", "properties": {}},
    "defer_loading": True,
}
"""The one deferred definition sent in the ``defer_loading`` style before anything is found.
It is never referenced, so the model never sees it."""

SEARCHES_DEFERRED_TOOLS = "searches_deferred_tools"
"""The `Tool.extras` flag of a tool that finds deferred tools (ToolSearch). Such a tool is
sent only while at least one deferred tool exists."""

SERVER_SEARCH_TOOLS: dict[str, dict[str, str]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}

PRE_COMPACT_KEY = "pre_compact_discovered_tools"


def resolve_disclosure(
    option: str, model: object = None
) -> tuple[DisclosureStyle, ServerSearch | None]:
    """The style (and server-side search, if any) that `option` means for `model`.

    ``auto`` is ``defer_loading`` when the model's endpoint expands `tool_reference` blocks
    (its `supports_defer_loading` attribute is true: the Messages API client, a cassette
    recorded that way) and ``discovered`` otherwise."""
    match option:
        case "auto":
            native = bool(getattr(model, "supports_defer_loading", False))
            return ("defer_loading" if native else "discovered"), None
        case "defer_loading" | "discovered":
            return option, None
        case "server_bm25":
            return "defer_loading", "bm25"
        case "server_regex":
            return "defer_loading", "regex"
    raise ValueError(
        f"unknown disclosure {option!r}; choose one of: {', '.join(DISCLOSURE_OPTIONS)}"
    )


def _enabled(tool: Tool[Any]) -> bool:
    try:
        return bool(tool.is_enabled())
    except Exception:
        return False


def is_deferred(tool: Tool[Any]) -> bool:
    """Whether the tool stays out of `tools` until discovered (`always_load` wins)."""
    return tool.should_defer and not tool.always_load


def searches_deferred_tools(tool: Tool[Any]) -> bool:
    """Whether the tool is a deferred-tool finder such as ToolSearch (by its flag)."""
    return bool(tool.extras.get(SEARCHES_DEFERRED_TOOLS))


def with_finder(tools: Sequence[Tool[Any]], finder: Tool[Any] | None) -> list[Tool[Any]]:
    """The pool plus `finder` (a tool with the `SEARCHES_DEFERRED_TOOLS` flag) while a
    deferred tool is in it and no finder is there yet."""
    pool = list(tools)
    if finder is None or any(searches_deferred_tools(tool) for tool in pool):
        return pool
    if any(is_deferred(tool) for tool in pool):
        pool.append(finder)
    return pool


def is_tool_search_enabled(tools: Iterable[Tool[Any]]) -> bool:
    """ToolSearch is offered only while at least one enabled deferred tool exists."""
    return any(is_deferred(tool) and _enabled(tool) for tool in tools)


# ── discovered tools ─────────────────────────────────────────────────────────────────────


def _tool_references(content: Any) -> Iterable[str]:
    """Names in `tool_reference` blocks: inside a ToolSearch tool_result, or inside the
    result of the API's server-side search (``{"tool_references": [...]}``)."""
    if isinstance(content, Mapping):
        yield from _tool_references(content.get("tool_references"))
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "tool_reference" and isinstance(block.get("tool_name"), str):
            yield block["tool_name"]
        elif kind in ("tool_result", "tool_search_tool_result"):
            yield from _tool_references(block.get("content"))


def _carried(boundary: Any) -> Iterable[str]:
    """Tool names a compact boundary carries, from a mapping or an object, either spelling."""
    if isinstance(boundary, Mapping):
        for key in ("compact_metadata", "compactMetadata"):
            if isinstance(boundary.get(key), Mapping):
                yield from _carried(boundary[key])
        names = boundary.get(PRE_COMPACT_KEY, boundary.get("preCompactDiscoveredTools"))
    else:
        names = getattr(boundary, PRE_COMPACT_KEY, None)
    if isinstance(names, Iterable) and not isinstance(names, str | bytes):
        yield from (name for name in names if isinstance(name, str))


def _is_boundary(message: Mapping[str, Any]) -> bool:
    return "compact_boundary" in (message.get("type"), message.get("subtype"))


def _message_names(message: Mapping[str, Any]) -> Iterable[str]:
    """The names one message of the history discovers (a boundary record's carried ones)."""
    if _is_boundary(message):
        return _carried(message)
    return _tool_references(message.get("content"))


def extract_discovered_tool_names(
    messages: Iterable[Mapping[str, Any]], compact_boundaries: Iterable[Any] = ()
) -> set[str]:
    """Names of tools the conversation has discovered: every `tool_reference` block inside a
    tool_result, plus the names compact boundaries carried over from before a compaction.

    This reads the whole history; a loop keeps the same answer with `DiscoveredTools`."""
    found: set[str] = set()
    for boundary in compact_boundaries:
        found.update(_carried(boundary))
    for message in messages:
        found.update(_message_names(message))
    return found


class DiscoveredTools:
    """`extract_discovered_tool_names` of one conversation, kept as it grows.

    Given the loop's `MessageList`, each call reads only the messages added or edited since
    the last one (a `Watch` says which), and counts each name per message, so an edit that
    drops the last reference to a tool drops the tool. A new list (compaction, resume)
    starts over; a plain sequence is read whole every time."""

    def __init__(self) -> None:
        self._messages: MessageList | None = None
        self._watch = Watch()
        self._per_message: list[tuple[str, ...]] = []
        self._counts: dict[str, int] = {}

    def names(
        self, messages: Sequence[Mapping[str, Any]], compact_boundaries: Iterable[Any] = ()
    ) -> set[str]:
        """What `extract_discovered_tool_names(messages, compact_boundaries)` returns."""
        found = extract_discovered_tool_names((), compact_boundaries)
        if not isinstance(messages, MessageList):
            return found | extract_discovered_tool_names(messages)
        if messages is not self._messages:
            self._messages, self._watch = messages, messages.watch()
            self._per_message, self._counts = [], {}
        start = min(self._watch.synced, len(self._per_message))
        for names in self._per_message[start:]:
            for name in names:
                self._counts[name] -= 1
                if not self._counts[name]:
                    del self._counts[name]
        del self._per_message[start:]
        for message in messages[start:]:
            names = tuple(set(_message_names(message)))
            self._per_message.append(names)
            for name in names:
                self._counts[name] = self._counts.get(name, 0) + 1
        self._watch.synced = len(messages)
        return found | self._counts.keys()


def compact_metadata(
    messages: Iterable[Mapping[str, Any]], compact_boundaries: Iterable[Any] = ()
) -> dict[str, list[str]]:
    """What a compaction must store on its boundary so discovered tools stay loaded."""
    return {PRE_COMPACT_KEY: sorted(extract_discovered_tool_names(messages, compact_boundaries))}


def reload_exchange(
    names: Sequence[str], *, tool_use_id: str, search_tool: str = "ToolSearch"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finder call selecting `names` and its tool_result with one `tool_reference` each.

    In the ``defer_loading`` style a deferred tool is visible only where a reference names
    it, so a conversation that lost its references (a compaction summarised them away; a
    sub-agent starts from its parent's finds) appends this exchange to load them again,
    leaving the cached prefix untouched. Returns (assistant message, tool_result block)."""
    use = {
        "type": "tool_use",
        "id": tool_use_id,
        "name": search_tool,
        "input": {"query": "select:" + ",".join(names)},
    }
    summary = "Loaded again, found earlier in this conversation: " + ", ".join(names)
    result = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [
            {"type": "text", "text": summary},
            *({"type": "tool_reference", "tool_name": name} for name in names),
        ],
    }
    return {"role": "assistant", "content": [use]}, result


def carried_unreferenced(
    all_tools: Sequence[Tool[Any]],
    messages: Iterable[Mapping[str, Any]],
    compact_boundaries: Iterable[Any],
    *,
    referenced: Set[str] | None = None,
) -> list[str]:
    """Deferred tools of the pool that compact boundaries carry but no `tool_reference`
    in `messages` names (in pool order): the ones `reload_exchange` must load again.

    `referenced`, when given, is what `messages` names (kept by `DiscoveredTools`), and
    `messages` is not read."""
    carried = extract_discovered_tool_names((), compact_boundaries)
    if not carried:
        return []  # the usual case: nothing to look for in the history
    if referenced is None:
        referenced = extract_discovered_tool_names(messages)
    return [
        tool.name
        for tool in all_tools
        if tool.name in carried
        and tool.name not in referenced
        and is_deferred(tool)
        and _enabled(tool)
    ]


# ── the attachment ───────────────────────────────────────────────────────────────────────


def deferred_tools_attachment(
    added: Sequence[str], removed: Sequence[str] = (), *, search_tool: str = "ToolSearch"
) -> str | None:
    """The text that tells the model which deferred tools appeared or went away; None if none."""
    if not added and not removed:
        return None
    parts = ["<system-reminder>"]
    if added:
        parts.append(
            "The following deferred tools are available. Their definitions are not loaded "
            f"yet: call {search_tool} with keywords, or with select:<name>, to load one "
            "before calling it."
        )
        parts.extend(added)
    if removed:
        parts.append(
            "The following deferred tools are no longer available; do not search for or call them."
        )
        parts.extend(removed)
    parts.append("</system-reminder>")
    return "\n".join(parts)


@dataclass
class DisclosureState:
    """What a session has told the model so far; one per conversation, kept by the session.

    `announced` holds the deferred tool names the attachments have listed. `definitions`
    keeps the last API definition of each discovered tool, so a tool that vanished from the
    pool (its server went away) is still defined while references to it remain in the
    history — the API rejects a `tool_reference` to an undefined tool.
    """

    announced: set[str] = field(default_factory=set)
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def copy(self) -> DisclosureState:
        """A copy to build a side request with (compaction) without touching this one."""
        return DisclosureState(set(self.announced), dict(self.definitions))

    def reset(self) -> None:
        """Forget what was announced (after a compaction dropped the attachments)."""
        self.announced.clear()


@dataclass(frozen=True, slots=True)
class RequestTools:
    """What one request sends: the `tools` array, and the attachment for its user message."""

    api_tools: list[dict[str, Any]]
    loaded: list[Tool[Any]]
    """The pool's tools whose definitions are in `api_tools` without `defer_loading`."""
    deferred_names: tuple[str, ...]
    """Deferred tools whose definitions the model has not been given."""
    attachment: str | None
    """Text to add to this request's user message (and keep in the history), or None."""


def _definition(tool: Tool[Any]) -> dict[str, Any] | None:
    try:
        return tool.to_api()
    except Exception:
        return None


def tools_for_request(
    all_tools: Sequence[Tool[Any]],
    messages: Iterable[Mapping[str, Any]],
    *,
    state: DisclosureState | None = None,
    style: DisclosureStyle = "discovered",
    compact_boundaries: Iterable[Any] = (),
    server_search: ServerSearch | None = None,
    discovered: Set[str] | None = None,
) -> RequestTools:
    """Build one request's `tools` array from the pool, in a stable order.

    Non-deferred tools come first in pool order, then the deferred ones that travel (in
    pool order), so two requests with the same pool and discoveries send identical bytes,
    and the tools without `defer_loading` are a prefix that a discovery never changes.
    `server_search` (only with ``style="defer_loading"``) swaps ToolSearch for the API's
    server-side tool search. Updates `state` with what the attachment announces.
    `discovered`, when given, is what `messages` and `compact_boundaries` discovered (kept
    by `DiscoveredTools`), and neither is read.
    """
    if server_search is not None and style != "defer_loading":
        raise ValueError("server_search needs style='defer_loading'")
    state = state if state is not None else DisclosureState()
    pool = [tool for tool in all_tools if _enabled(tool)]
    deferred = [tool for tool in pool if is_deferred(tool)]
    if discovered is None:
        discovered = extract_discovered_tool_names(messages, compact_boundaries)
    native = style == "defer_loading"

    keep_searcher = bool(deferred) and server_search is None
    base = [
        tool
        for tool in pool
        if not is_deferred(tool) and (keep_searcher or not searches_deferred_tools(tool))
    ]
    api_tools: list[dict[str, Any]] = []
    loaded: list[Tool[Any]] = []
    for tool in base:
        definition = _definition(tool)
        if definition is not None:
            api_tools.append(definition)
            loaded.append(tool)

    not_loaded: list[str] = []
    for tool in deferred:
        definition = _definition(tool)
        if definition is None:
            continue
        found = tool.name in discovered
        if found:
            state.definitions[tool.name] = definition
        else:
            not_loaded.append(tool.name)
        if native and (found or server_search is not None):
            api_tools.append({**definition, "defer_loading": True})
        elif found:
            api_tools.append(definition)
            loaded.append(tool)

    present = {definition["name"] for definition in api_tools}
    for name in sorted(discovered - present):
        if name in state.definitions:
            kept = state.definitions[name]
            api_tools.append({**kept, "defer_loading": True} if native else kept)
    if native and deferred and server_search is None:
        api_tools.append(dict(PLACEHOLDER))
    if server_search is not None:
        api_tools.append(dict(SERVER_SEARCH_TOOLS[server_search]))

    names = [tool.name for tool in deferred]
    added = [name for name in names if name not in state.announced]
    removed = sorted(state.announced - set(names))
    search_name = (
        SERVER_SEARCH_TOOLS[server_search]["name"]
        if server_search is not None
        else next((t.name for t in base if searches_deferred_tools(t)), "ToolSearch")
    )
    attachment = deferred_tools_attachment(added, removed, search_tool=search_name)
    state.announced = set(names)
    return RequestTools(api_tools, loaded, tuple(not_loaded), attachment)
