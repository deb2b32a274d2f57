"""MCP names and schemas made valid for the Messages API, and mapped back for the server.

**Tool names.** The API takes tool names matching ``^[a-zA-Z0-9_-]{1,128}$``, unique in a
request. An MCP tool is ``mcp__<server>__<tool>`` with every other character replaced by
``_``; two names that only differ there (``files.read`` and ``files_read``) would collide,
and every request after that would be refused. So within a collision the one whose name
needed no change keeps the plain name, and each other one gets ``_`` plus four hex digits of
a hash of its real name: ``mcp__odd__files_read_601e``. The suffix depends on the name only,
never on the order the server lists its tools in, so a permission rule written for it keeps
naming the same tool. Server names collide the same way (``my.db`` and ``my_db``); the
server part gets the suffix then, so ``mcp__server`` rules still name one server.

**Schemas.** The API requires property keys to match ``^[a-zA-Z0-9_.-]{1,64}$``. A key such
as ``"file path"`` or ``"ns:key"`` is renamed (``file_path``, ``ns_key``; a suffix again if
that name is taken), its description says what the server calls it, and the arguments of a
call are renamed back before they reach the server. Keys are renamed in `properties`,
nested object properties and array `items`; `required` follows. A bad key anywhere this
cannot map back (under `$defs`, `anyOf`, `patternProperties`, ...) leaves the tool out, with a
notice in `%agent mcp`, rather than break every request of the session.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = [
    "KeyMap",
    "UnmappableSchema",
    "fit_schema",
    "restore_arguments",
    "tool_names",
    "unique_names",
]

MAX_NAME = 128
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
_UNSAFE_KEY = re.compile(r"[^A-Za-z0-9_.-]")
_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
MAX_KEY = 64


def _suffix(real: str) -> str:
    return hashlib.sha256(real.encode()).hexdigest()[:4]


def unique_names(names: Iterable[str], *, limit: int, unsafe: re.Pattern[str]) -> dict[str, str]:
    """Each real name → a valid name, unique among them (see the module docstring)."""
    real_names = sorted(set(names))
    plain = {real: (unsafe.sub("_", real) or "_")[:limit] for real in real_names}
    groups: dict[str, list[str]] = {}
    for real in real_names:
        groups.setdefault(plain[real], []).append(real)
    result: dict[str, str] = {}
    taken = set(groups)
    for candidate, members in groups.items():
        keeper = candidate if candidate in members else None
        if keeper is None and len(members) == 1:
            keeper = members[0]
        for real in members:
            if real == keeper:
                result[real] = candidate
                continue
            name = f"{candidate[: limit - 5]}_{_suffix(real)}"
            while name in taken:
                name = f"{candidate[: limit - 5]}_{_suffix(name)}"
            taken.add(name)
            result[real] = name
    return result


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Each of one server's tools → its unique ``mcp__<server>__<tool>`` name."""
    prefix = f"mcp__{server}__"
    short = unique_names(tools, limit=MAX_NAME - len(prefix), unsafe=_UNSAFE_NAME)
    return {real: prefix + name for real, name in short.items()}


# --- schemas ------------------------------------------------------------------------------


class UnmappableSchema(ValueError):
    """A schema with a property key the API refuses, in a place a call cannot map back."""


@dataclass
class KeyMap:
    """How one object schema's keys were renamed: API key → (server key, nested maps)."""

    keys: dict[str, str] = field(default_factory=dict[str, str])
    nested: dict[str, KeyMap] = field(default_factory=dict[str, "KeyMap"])
    items: KeyMap | None = None

    def __bool__(self) -> bool:
        return bool(self.keys or self.nested or self.items)


_UNMAPPED = ("$defs", "definitions", "anyOf", "oneOf", "allOf", "not", "patternProperties")


def fit_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], KeyMap]:
    """The schema with valid property keys, and how to map arguments back; raises
    `UnmappableSchema` when a bad key sits where it cannot be mapped back."""
    return _fit(schema, "input_schema")


def _fit(schema: Mapping[str, Any], where: str) -> tuple[dict[str, Any], KeyMap]:
    result = dict(schema)
    mapping = KeyMap()
    for name in _UNMAPPED:
        if name in result and _has_bad_key(result[name]):
            raise UnmappableSchema(f"{where}.{name} has property keys the API refuses")
    properties = result.get("properties")
    if isinstance(properties, dict):
        renamed = unique_names(properties, limit=MAX_KEY, unsafe=_UNSAFE_KEY)
        fitted: dict[str, Any] = {}
        for real, inner in properties.items():
            key = renamed[str(real)] if not _KEY.match(str(real)) else str(real)
            value: Any = inner
            if isinstance(inner, dict):
                value, inner_map = _fit(inner, f"{where}.properties.{real}")
                if inner_map:
                    mapping.nested[key] = inner_map
                if key != real:
                    value = _described(value, str(real))
            fitted[key] = value
            if key != real:
                mapping.keys[key] = str(real)
        result["properties"] = fitted
        if isinstance(result.get("required"), list):
            back = {real: key for key, real in mapping.keys.items()}
            result["required"] = [back.get(item, item) for item in result["required"]]
    items = result.get("items")
    if isinstance(items, dict):
        result["items"], items_map = _fit(items, f"{where}.items")
        mapping.items = items_map or None
    extra = result.get("additionalProperties")
    if isinstance(extra, dict) and _has_bad_key(extra):
        raise UnmappableSchema(f"{where}.additionalProperties has property keys the API refuses")
    return result, mapping


def _described(schema: dict[str, Any], real: str) -> dict[str, Any]:
    note = f'(the server calls this "{real}")'
    description = schema.get("description")
    text = f"{description} {note}" if isinstance(description, str) and description else note
    return {**schema, "description": text}


def _has_bad_key(node: Any) -> bool:
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict) and any(not _KEY.match(str(k)) for k in properties):
            return True
        return any(_has_bad_key(value) for value in node.values())
    if isinstance(node, list):
        return any(_has_bad_key(value) for value in node)
    return False


def restore_arguments(arguments: Any, mapping: KeyMap | None) -> Any:
    """A call's arguments with the server's own keys put back."""
    if mapping is None or not mapping:
        return arguments
    if isinstance(arguments, dict):
        restored: dict[str, Any] = {}
        items: dict[str, Any] = cast(dict[str, Any], arguments)
        for key, value in items.items():
            inner = mapping.nested.get(key)
            restored[mapping.keys.get(key, key)] = restore_arguments(value, inner)
        return restored
    if isinstance(arguments, list) and mapping.items is not None:
        return [restore_arguments(value, mapping.items) for value in arguments]
    return arguments
