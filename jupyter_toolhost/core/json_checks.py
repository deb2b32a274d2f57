"""JSON a person wrote, checked against a pydantic type, each problem named by its field.

Settings files, ``mcpServers`` entries, cassettes and what a hook prints are JSON written by
a person (or by a program a person wrote). Each is described by a pydantic type; when a value
breaks it, `field_problems` turns pydantic's `ValidationError` into `FieldProblem`s: the
field as a JSON path (``permissions.allow[3]``, ``mcpServers.db.command``) and what to write
there, from a table of the words each field expects (``must be a list of rule strings such
as [...], not the string "Bash(ls)"``). The caller adds the file and raises or collects its
own error class; `without` and `line_of` help a caller that keeps the rest of a file when
one part is broken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from .json_values import json_array, json_object

Location: TypeAlias = tuple[str | int, ...]
"""Keys and indexes from the checked value down to one part of it."""

ANY = "*"
"""In an `expected` pattern: any key of an object, or (as ``[*]``) any index of a list."""

_KEY = "[key]"
"""The step pydantic adds to a location when the problem is a dict's key, not its value."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MAX_SHOWN = 60


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One part of a JSON value that is not what it should be, and what to write there."""

    loc: Location
    """Where, from the checked value down (a key problem points at the key's own entry)."""
    message: str
    """What is wrong and what to write instead: ``must be true or false, not the string "yes"``."""

    @property
    def path(self) -> str:
        """`loc` as a JSON path: ``permissions.allow[3]``."""
        return json_path(self.loc)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.loc else self.message


def json_path(loc: Iterable[str | int]) -> str:
    """``("mcpServers", "db", "args", 2)`` as ``mcpServers.db.args[2]``; a key that is not a
    plain name is quoted: ``hooks["my event"]``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
    return text


def describe_value(value: object) -> str:
    """A JSON value as a person would name it: ``the string "yes"``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = json.dumps(value, ensure_ascii=False)
        if len(shown) > _MAX_SHOWN:
            shown = shown[: _MAX_SHOWN - 2] + '…"'
        return f"the string {shown}" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_TYPE_WORDS = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "typed_dict_type": "an object",
    "none_required": "null",
}


def field_problems(
    error: ValidationError,
    *,
    expected: Mapping[str, str] | None = None,
    at: Location = (),
) -> list[FieldProblem]:
    """Each of `error`'s problems, at its place below `at`, in words that say what to write.

    `expected` maps a path pattern below `at` (``permissions.allow``,
    ``hooks.*[*].matcher``; ``*`` is any key, ``[*]`` any index) to the words for what
    belongs there ("a list of rule strings such as ..."). Errors raised as
    `PydanticCustomError` by the type's own validators keep their own words. Two errors at
    one place (a union's branches) are given once.
    """
    table = expected or {}
    found: dict[Location, FieldProblem] = {}
    for details in error.errors(include_url=False):
        inner = _data_loc(details["loc"])
        loc = (*at, *inner)
        if loc not in found:
            pattern = _pattern_of(inner, table)
            words = table[pattern] if pattern is not None else None
            found[loc] = FieldProblem(loc, _words(details, words))
    return list(found.values())


def _data_loc(loc: Sequence[str | int]) -> Location:
    """A pydantic location without its own steps: ``[key]`` (the key's entry stands for it)
    and the names of a union's branches or of validator functions."""
    return tuple(
        part
        for part in loc
        if isinstance(part, int) or (part != _KEY and not _is_schema_step(part))
    )


def _is_schema_step(part: str) -> bool:
    return "[" in part and part.endswith("]") and not part.startswith("[")


def _pattern_of(loc: Location, table: Mapping[str, str]) -> str | None:
    """The pattern of `table` that `loc` matches, exact names before ``*`` (None: none)."""
    best: str | None = None
    score = -1
    for pattern in table:
        matched = _match(_pattern_steps(pattern), loc)
        if matched is not None and matched > score:
            best, score = pattern, matched
    return best


def _pattern_steps(pattern: str) -> list[str]:
    return [step for step in re.split(r"\.|(?=\[)", pattern) if step]


def _match(steps: Sequence[str], loc: Location) -> int | None:
    """How many steps of `loc` `steps` names exactly, or None when it does not match."""
    if len(steps) != len(loc):
        return None
    exact = 0
    for step, part in zip(steps, loc, strict=True):
        if step == "[*]":
            if not isinstance(part, int):
                return None
        elif isinstance(part, int) or (step != ANY and step != part):
            return None
        elif step == part:
            exact += 1
    return exact


def _words(details: ErrorDetails, expected: str | None) -> str:
    kind = details["type"]
    context = details.get("ctx") or {}
    value: object = details.get("input")
    if kind not in _TYPE_WORDS and kind not in ("missing", "literal_error", "greater_than"):
        return details["msg"]  # our own validators' words (or pydantic's, for the rest)
    if kind == "missing":
        return f"is missing: write {expected}" if expected else "is missing"
    if expected is None and kind == "literal_error":
        expected = f"one of {context.get('expected')}"
    if expected is None and kind == "greater_than":
        expected = f"greater than {context.get('gt')}"
    return f"must be {expected or _TYPE_WORDS[kind]}, not {describe_value(value)}"


def value_at(data: object, loc: Location) -> object:
    """The value at `loc` in `data` (None where there is none)."""
    node = data
    for part in loc:
        found = json_object(node)
        listed = json_array(node)
        if isinstance(part, str) and found is not None:
            node = found.get(part)
        elif isinstance(part, int) and listed is not None and 0 <= part < len(listed):
            node = listed[part]
        else:
            return None
    return node


def without(data: object, places: Iterable[Location]) -> object:
    """`data` with the parts at `places` taken out (a key removed from its object, an item
    from its list); what it shares with `data` is copied along the way, never changed. A
    place inside another place taken out is already gone."""
    chosen = sorted(set(places), key=len)
    kept: list[Location] = []
    for place in chosen:
        if place and not any(place[: len(outer)] == outer for outer in kept):
            kept.append(place)
    result = data
    # Items of one list are removed from the last to the first, so indexes stay true.
    for place in sorted(kept, key=_removal_order, reverse=True):
        result = _remove(result, place)
    return result


def _removal_order(place: Location) -> tuple[tuple[int, str | int], ...]:
    return tuple((0, part) if isinstance(part, int) else (1, part) for part in place)


def _remove(node: object, place: Location) -> object:
    head, rest = place[0], place[1:]
    found = json_object(node)
    listed = json_array(node)
    if found is not None and isinstance(head, str) and head in found:
        copy = dict(found)
        if rest:
            copy[head] = _remove(found[head], rest)
        else:
            del copy[head]
        return copy
    if listed is not None and isinstance(head, int) and 0 <= head < len(listed):
        items = list(listed)
        if rest:
            items[head] = _remove(listed[head], rest)
        else:
            del items[head]
        return items
    return node


def line_of(text: str, loc: Location, value: object = None) -> int | None:
    """The line of `text` (JSON) where the part at `loc` is written, found by its keys in
    order (and, for a string, its value after them); None when none of them is found."""
    position = -1
    for part in loc:
        if isinstance(part, str):
            at = text.find(json.dumps(part, ensure_ascii=False), position + 1)
            position = at if at >= 0 else position
    if isinstance(value, str):
        at = text.find(json.dumps(value, ensure_ascii=False), position + 1)
        position = at if at >= 0 else position
    return text.count("\n", 0, position) + 1 if position >= 0 else None
