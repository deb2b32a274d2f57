"""MCP names and schemas made valid for the Messages API, and mapped back for the server.

**Server names.** A tool's name is ``mcp__<server>__<tool>``, and permission rules name a
server as ``mcp__<server>``; so the server part must end where the first ``__`` after
``mcp__`` begins. A server name that contains ``__``, starts or ends with ``_`` (``files_``
gives ``mcp__files___delete``, which reads as server ``files`` and tool ``_delete``), or
holds characters the API refuses is renamed (`server_names`): other characters become
``_`` (as Claude Code does), runs of ``_`` become one, ``_`` is cut from both ends, and the
name is cut to 64 characters. A name that collides with another server's gets ``_`` and
four hex digits of a hash of its real name. The person is told the old and the new name
(`renamed_notice`); deny and ask rules written with the configured name
(``mcp__<configured>``, ``mcp__<configured>__<tool>``) still apply. Such an old spelling can
be the new name of another tool (server ``-_`` becomes ``-``, and the old ``mcp__-____`` for
its tool ``_`` is the new name of its tool ``__``): a deny or ask rule with that text then
holds for both, since it cannot tell which one the person meant. A clean name is never
changed. With clean server names, `parse_name` splits any tool name back into its server and
its tool, whatever the tool part holds (``__`` and leading ``_`` included).

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

from ..core.errors import McpError
from ..core.json_values import json_array, json_object

__all__ = [
    "MAX_SERVER",
    "KeyMap",
    "UnmappableSchema",
    "clean_server_name",
    "fit_schema",
    "parse_name",
    "renamed_notice",
    "restore_arguments",
    "server_names",
    "tool_names",
    "unique_names",
]

MAX_NAME = 128
MAX_SERVER = 64
PREFIX = "mcp__"
_CLEAN_SERVER = re.compile(r"^(?!_)(?!.*__)(?!.*_$)[A-Za-z0-9_-]{1,64}$")
_RUNS = re.compile(r"_{2,}")
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


def clean_server_name(name: str) -> bool:
    """Whether `name` can stand in ``mcp__<name>__<tool>`` unchanged and unambiguously."""
    return bool(_CLEAN_SERVER.match(name))


def _cleaned(name: str) -> str:
    plain = _RUNS.sub("_", _UNSAFE_NAME.sub("_", name)).strip("_")
    return plain[:MAX_SERVER].rstrip("_") or "server"


def server_names(names: Iterable[str]) -> dict[str, str]:
    """Each configured server name → the name its tools and rules use: unchanged when it is
    clean, else cleaned (see the module docstring); unique among them, and never another
    server's configured name."""
    real_names = sorted(set(names))
    result: dict[str, str] = {n: n for n in real_names if clean_server_name(n)}
    taken = set(real_names)
    for real in real_names:
        if real in result:
            continue
        name = _cleaned(real)
        while name in taken:
            name = f"{name[: MAX_SERVER - 5].rstrip('_')}_{_suffix(real + name)}"
        taken.add(name)
        result[real] = name
    return result


def renamed_notice(configured: str, name: str) -> str:
    """What the person is told about a server renamed for tool names and rules."""
    return (
        f"server name {configured!r} is {name!r} in tool names (mcp__{name}__<tool>), "
        f"because {configured!r} would make them ambiguous or invalid: permission rules must "
        f"name it mcp__{name}. A deny or ask rule written with the old name still applies; an "
        "allow rule does not."
    )


def parse_name(tool_name: str) -> tuple[str, str] | None:
    """(server, tool) of a ``mcp__<server>__<tool>`` name whose server name is clean; None
    for any other name."""
    if not tool_name.startswith(PREFIX):
        return None
    server, separator, tool = tool_name[len(PREFIX) :].partition("__")
    if not separator or not tool or not clean_server_name(server):
        return None
    return server, tool


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Each of one server's tools → its unique ``mcp__<server>__<tool>`` name."""
    prefix = f"mcp__{server}__"
    short = unique_names(tools, limit=MAX_NAME - len(prefix), unsafe=_UNSAFE_NAME)
    return {real: prefix + name for real, name in short.items()}


# --- schemas ------------------------------------------------------------------------------


class UnmappableSchema(McpError, ValueError):
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
    properties = json_object(result.get("properties"))
    if properties is not None:
        renamed = unique_names(properties, limit=MAX_KEY, unsafe=_UNSAFE_KEY)
        fitted: dict[str, Any] = {}
        for real, inner in properties.items():
            key = renamed[str(real)] if not _KEY.match(str(real)) else str(real)
            value: Any = inner
            inner_schema = json_object(inner)
            if inner_schema is not None:
                value, inner_map = _fit(inner_schema, f"{where}.properties.{real}")
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
    items = json_object(result.get("items"))
    if items is not None:
        result["items"], items_map = _fit(items, f"{where}.items")
        mapping.items = items_map or None
    extra = json_object(result.get("additionalProperties"))
    if extra is not None and _has_bad_key(extra):
        raise UnmappableSchema(f"{where}.additionalProperties has property keys the API refuses")
    return result, mapping


def _described(schema: dict[str, Any], real: str) -> dict[str, Any]:
    note = f'(the server calls this "{real}")'
    description = schema.get("description")
    text = f"{description} {note}" if isinstance(description, str) and description else note
    return {**schema, "description": text}


def _has_bad_key(node: object) -> bool:
    found = json_object(node)
    if found is not None:
        properties = json_object(found.get("properties"))
        if properties is not None and any(not _KEY.match(str(k)) for k in properties):
            return True
        return any(_has_bad_key(value) for value in found.values())
    listed = json_array(node)
    if listed is not None:
        return any(_has_bad_key(value) for value in listed)
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
    listed = json_array(arguments)
    if listed is not None and mapping.items is not None:
        return [restore_arguments(value, mapping.items) for value in listed]
    return arguments
