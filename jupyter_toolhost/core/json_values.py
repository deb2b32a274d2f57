"""Narrowing values read from JSON (or passed on from it) without a schema.

`isinstance(value, list)` tells a type checker only "a list of something unknown"; these
functions say what the caller may assume: an array's items and an object's values are JSON
values, not yet checked, so they are typed `object` and narrowed again where they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast


def json_array(value: object) -> list[object] | None:
    """`value` when it is a list, else None."""
    return cast("list[object]", value) if isinstance(value, list) else None


def json_object(value: object) -> dict[str, object] | None:
    """`value` when it is a dict (a JSON object: its keys are strings), else None."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def json_mapping(value: object) -> Mapping[str, object] | None:
    """`value` when it is any mapping (a dict or a read-only view of one), else None."""
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else None


def json_strings(value: object) -> list[str] | None:
    """`value` when it is a list of strings only, else None."""
    items = json_array(value)
    if items is None:
        return None
    strings = [item for item in items if isinstance(item, str)]
    return strings if len(strings) == len(items) else None


def json_string_map(value: object) -> dict[str, str] | None:
    """`value` when it is a dict of strings to strings only, else None."""
    if not isinstance(value, dict):
        return None
    pairs = cast("dict[object, object]", value)
    strings = {k: v for k, v in pairs.items() if isinstance(k, str) and isinstance(v, str)}
    return strings if len(strings) == len(pairs) else None


def json_blocks(value: object) -> list[Mapping[str, object]]:
    """The mappings in `value` when it is a list (anything else in it left out), else []."""
    found = (json_mapping(item) for item in json_array(value) or ())
    return [item for item in found if item is not None]
