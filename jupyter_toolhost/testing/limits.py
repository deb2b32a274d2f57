"""The Messages API's documented limits that its SDK's request types do not express.

- a tool's `input_schema` property keys match `^[a-zA-Z0-9_.-]{1,64}$` (nested object
  schemas included);
- an image's base64 text is at most 5 MB, its sides at most 8000 px, and its declared
  `media_type` is the type of its bytes.

Images are read with Pillow, an implementation none of the code under test shares a line
with, so a wrong sniff or size in the toolhost cannot hide behind the same wrong check here.
Each check raises `InvalidRequest` with the API's wording.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Iterator
from typing import Any

from jupyter_toolhost.testing.invalid_request import InvalidRequest

__all__ = [
    "MAX_IMAGE_BASE64_BYTES",
    "MAX_IMAGE_SIDE",
    "PROPERTY_KEY_PATTERN",
    "check_limits",
]

PROPERTY_KEY_PATTERN = "^[a-zA-Z0-9_.-]{1,64}$"
_PROPERTY_KEY = re.compile(PROPERTY_KEY_PATTERN)
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8000
_PILLOW_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def check_limits(body: dict[str, Any]) -> None:
    """Raise `InvalidRequest` for the first documented limit `body` breaks."""
    tools = body.get("tools")
    if isinstance(tools, list):
        for index, tool in enumerate(tools):
            schema = tool.get("input_schema") if isinstance(tool, dict) else None
            if isinstance(schema, dict):
                _check_property_keys(f"tools.{index}.input_schema", schema)
    messages = body.get("messages")
    if isinstance(messages, list):
        for where, image in _images(messages):
            _check_image(where, image)


def _check_property_keys(where: str, schema: dict[str, Any]) -> None:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, inner in properties.items():
            if not _PROPERTY_KEY.match(key):
                raise InvalidRequest(
                    f"{where}.properties: Property keys should match pattern "
                    f"'{PROPERTY_KEY_PATTERN}'"
                )
            if isinstance(inner, dict):
                _check_property_keys(f"{where}.properties.{key}", inner)
    for name in ("items", "additionalProperties"):
        inner = schema.get(name)
        if isinstance(inner, dict):
            _check_property_keys(f"{where}.{name}", inner)
    for name in ("anyOf", "oneOf", "allOf"):
        options = schema.get(name)
        if isinstance(options, list):
            for position, inner in enumerate(options):
                if isinstance(inner, dict):
                    _check_property_keys(f"{where}.{name}.{position}", inner)


def _images(messages: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            where = f"messages.{index}.content.{position}"
            if block.get("type") == "image":
                yield where, block
            inner = block.get("content")
            if block.get("type") == "tool_result" and isinstance(inner, list):
                for inner_position, item in enumerate(inner):
                    if isinstance(item, dict) and item.get("type") == "image":
                        yield f"{where}.content.{inner_position}", item


def _check_image(where: str, block: dict[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return
    data = source.get("data")
    if not isinstance(data, str):
        return
    if len(data) > MAX_IMAGE_BASE64_BYTES:
        raise InvalidRequest(
            f"{where}.image.source.base64: image exceeds 5 MB maximum: "
            f"{len(data)} bytes > {MAX_IMAGE_BASE64_BYTES} bytes"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"{where}.image.source.base64: invalid base64 data") from None
    media_type, width, height = _inspect(raw)
    if media_type is None:
        raise InvalidRequest(f"{where}.image.source.base64: Could not process image")
    if media_type != source.get("media_type"):
        raise InvalidRequest(
            f"{where}.image.source.base64: Image does not match the provided media type "
            f"{source.get('media_type')}"
        )
    if max(width, height) > MAX_IMAGE_SIDE:
        raise InvalidRequest(
            f"{where}.image.source.base64.data: At least one of the image dimensions exceed "
            f"max allowed size: {MAX_IMAGE_SIDE} pixels"
        )


def _inspect(raw: bytes) -> tuple[str | None, int, int]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as image:
            return _PILLOW_TYPES.get(image.format or ""), image.width, image.height
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None, 0, 0
