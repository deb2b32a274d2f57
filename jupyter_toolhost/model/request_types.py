"""Strict validation of request bodies against the `anthropic` SDK's own request types.

The SDK describes a Messages API request as TypedDicts (`MessageCreateParamsStreaming`,
`MessageCreateParamsNonStreaming`, `MessageCountTokensParams`, and their `beta` variants).
This module turns each into a pydantic validator that is stricter than the SDK itself:

- every TypedDict forbids keys it does not declare (the API rejects unknown fields);
- `Iterable[...]` fields are validated as lists, because pydantic checks iterables lazily
  and would otherwise let anything inside `messages`, `tools` or `system` through.

A body that carries an `anthropic-beta` header is checked against the beta types, any
other against the GA types. The loopback Messages server (`testing/`) calls
`sdk_problem` for every request, so every test that talks to it checks conformance.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any, Literal

from ..core.json_values import json_array, json_object

__all__ = ["prepare", "sdk_problem"]

Endpoint = Literal["create", "count_tokens"]


def sdk_problem(
    body: Mapping[str, Any], *, endpoint: Endpoint = "create", beta: bool = False
) -> str | None:
    """The first way `body` breaks the SDK's request type, as the API words it, or None."""
    from pydantic_core import ValidationError

    streaming = bool(body.get("stream"))
    validator = _validator(endpoint, beta, streaming)
    try:
        validator.validate_python(dict(body), strict=False)
    except ValidationError as error:
        return _describe(error, body)
    return None


def prepare() -> None:
    """Compile the GA validators now (the first takes about a second, with the import)."""
    for streaming in (True, False):
        _validator("create", False, streaming)
    _validator("count_tokens", False, False)


@functools.cache
def _validator(endpoint: Endpoint, beta: bool, streaming: bool) -> Any:
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator

    if beta:
        from anthropic.types.beta import (
            message_count_tokens_params as count_module,
        )
        from anthropic.types.beta import (
            message_create_params as create_module,
        )
    else:
        from anthropic.types import message_count_tokens_params as count_module
        from anthropic.types import message_create_params as create_module
    if endpoint == "count_tokens":
        kind: Any = count_module.MessageCountTokensParams
    elif streaming:
        kind = create_module.MessageCreateParamsStreaming
    else:
        kind = create_module.MessageCreateParamsNonStreaming
    schema = copy.deepcopy(TypeAdapter(kind).core_schema)
    _tighten(schema)
    return SchemaValidator(schema)  # pyright: ignore[reportArgumentType]


def _tighten(node: object) -> None:
    """Forbid undeclared keys in every TypedDict (and in the response models the SDK also
    accepts as content); validate iterables eagerly, as lists."""
    found = json_object(node)
    listed = json_array(node)
    if found is not None:
        kind = found.get("type")
        config = json_object(found.get("config"))
        if kind in ("typed-dict", "model-fields"):
            found["extra_behavior"] = "forbid"
            found.pop("extras_schema", None)
        elif kind == "model" and config is not None:
            config["extra_fields_behavior"] = "forbid"
        elif kind == "generator":
            found["type"] = "list"
        for value in list(found.values()):
            _tighten(value)
    elif listed is not None:
        for value in listed:
            _tighten(value)


def _describe(error: Any, body: Mapping[str, Any]) -> str:
    """One line for the most relevant error: the deepest place in the body that was found
    wrong, preferring union branches whose `type` (or `role`) matched the block."""
    errors: list[dict[str, Any]] = list(error.errors(include_url=False))
    rejected = {
        tuple(item["loc"][:-1])
        for item in errors
        if item["type"] == "literal_error" and item["loc"] and item["loc"][-1] in ("type", "role")
    }

    def rank(item: dict[str, Any]) -> tuple[int, bool]:
        loc = tuple(item["loc"])
        matched = not any(loc[: len(branch)] == branch for branch in rejected)
        return len(_data_path(loc, body)), matched

    best = max(errors, key=rank)
    path = ".".join(str(part) for part in _data_path(tuple(best["loc"]), body))
    return f"{path}: {best['msg']}" if path else str(best["msg"])


def _data_path(loc: tuple[Any, ...], body: Mapping[str, Any]) -> list[str | int]:
    """The parts of a pydantic location that are keys or indexes in the body itself (union
    branch names such as `TextBlockParam` or `list[...]` are left out)."""
    path: list[str | int] = []
    node: object = body
    for part in loc:
        found = json_object(node)
        listed = json_array(node)
        if found is not None and isinstance(part, str) and part in found:
            node = found[part]
            path.append(part)
        elif listed is not None and isinstance(part, int) and 0 <= part < len(listed):
            node = listed[part]
            path.append(part)
        elif found is not None and isinstance(part, str) and _is_key_name(part):
            path.append(part)  # an unknown or missing key: named, and nothing below it
            node = None
    return path


def _is_key_name(part: str) -> bool:
    return part.isidentifier() and not part[:1].isupper()
