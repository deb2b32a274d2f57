"""Images the Messages API accepts, by construction.

The API takes PNG, JPEG, GIF and WebP images whose base64 text is at most 5 MB, whose sides
are at most 8000 px, and whose declared media type is the type of their bytes. It scales
anything with a long edge over 1568 px (or over about 1.15 megapixels) down before the model
sees it, so sending more only costs bytes and time. Every image a tool returns (Read, an
MCP server, a function tool, a kernel's plot) goes through `fit_image` in the per-call
pipeline: the media type is read from the bytes (never from a file name or a server's
claim), other formats Pillow can read (BMP, TIFF, ...) are converted to PNG, and a large
image is scaled down to the size the model sees best. Each change is said in a note beside
the image, so the model knows it saw a smaller or converted picture. An image that cannot be
read at all is replaced by a note: the request stays valid.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

__all__ = [
    "MAX_BASE64_BYTES",
    "MAX_SIDE",
    "VISION_LONG_EDGE",
    "VISION_PIXELS",
    "FittedImage",
    "fit_content",
    "fit_image",
    "image_size",
    "image_tokens",
]

MAX_BASE64_BYTES = 5 * 1024 * 1024
"""The API's cap on an image's base64 text."""
MAX_SIDE = 8000
"""The API's cap on either side, in pixels."""
VISION_LONG_EDGE = 1568
"""The long edge (px) above which the API scales an image down before the model sees it."""
VISION_PIXELS = 1_150_000
"""The area (px) above which the API scales an image down (about 1,600 tokens)."""
PIXELS_PER_TOKEN = 750
"""An image costs about width × height / 750 tokens (the API's vision documentation)."""

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


@dataclass(frozen=True)
class FittedImage:
    """An image ready for an image block, or `data is None` when it had to be left out."""

    data: str | None
    media_type: str
    note: str | None
    """What was done to it (scaled, converted, media type corrected), for the model."""

    def block(self) -> dict[str, Any]:
        """The API's image block (only when `data` is set)."""
        assert self.data is not None
        source = {"type": "base64", "media_type": self.media_type, "data": self.data}
        return {"type": "image", "source": source}


def fit_image(raw: bytes, *, declared: str | None = None, name: str = "image") -> FittedImage:
    """`raw` as an image the API accepts and the model sees at full detail.

    `declared` is the media type someone claimed (a file's extension, an MCP server); it is
    only compared with the bytes. `name` is used in notes ("image.png was scaled ...")."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as image:
            fmt = image.format or ""
            width, height = image.size
            media_type = _FORMATS.get(fmt)
            scale = _scale(width, height)
            encoded_size = 4 * math.ceil(len(raw) / 3)
            if media_type is not None and scale == 1.0 and encoded_size <= MAX_BASE64_BYTES:
                note = _media_note(name, declared, media_type)
                return FittedImage(base64.b64encode(raw).decode("ascii"), media_type, note)
            image.load()
            return _reencode(image, fmt, scale, name=name, declared=declared)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        kind = f" (declared {declared})" if declared else ""
        return FittedImage(
            None,
            declared or "",
            f"[{name}{kind} was left out: it is not an image the model can read "
            f"({type(exc).__name__}); PNG, JPEG, GIF and WebP are]",
        )


def _scale(width: int, height: int) -> float:
    long_edge = max(width, height, 1)
    area = max(width * height, 1)
    return min(1.0, VISION_LONG_EDGE / long_edge, math.sqrt(VISION_PIXELS / area))


def _media_note(name: str, declared: str | None, actual: str) -> str | None:
    if declared is None or declared == actual:
        return None
    return f"[{name} was declared {declared} but its bytes are {actual}; sent as {actual}]"


def _reencode(
    image: Any, fmt: str, scale: float, *, name: str, declared: str | None
) -> FittedImage:
    from PIL import Image

    width, height = image.size
    frame = image
    target = "JPEG" if fmt == "JPEG" else "PNG"
    if target == "JPEG" and frame.mode not in ("RGB", "L"):
        frame = frame.convert("RGB")
    elif target == "PNG" and frame.mode not in ("RGB", "RGBA", "L", "LA", "P", "1"):
        frame = frame.convert("RGBA")
    for _ in range(12):
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        resized = frame.resize(size, Image.Resampling.LANCZOS) if size != (width, height) else frame
        buffer = io.BytesIO()
        if target == "JPEG":
            resized.save(buffer, format="JPEG", quality=85)
        else:
            resized.save(buffer, format="PNG", optimize=True)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(data) <= MAX_BASE64_BYTES:
            media_type = _FORMATS[target]
            return FittedImage(data, media_type, _change_note(name, fmt, (width, height), size))
        scale *= 0.7
    return FittedImage(None, _FORMATS[target], f"[{name} was left out: too large to send]")


def _change_note(name: str, fmt: str, before: tuple[int, int], after: tuple[int, int]) -> str:
    parts: list[str] = []
    if fmt not in _FORMATS:
        parts.append(f"converted from {fmt or 'an unknown format'} to PNG")
    if after != before:
        parts.append(
            f"scaled down from {before[0]}×{before[1]} to {after[0]}×{after[1]} px "
            f"(the model sees at most {VISION_LONG_EDGE} px on the long edge)"
        )
    else:
        parts.append("re-encoded to fit the API's 5 MB limit")
    return f"[{name} was {' and '.join(parts)}]"


def fit_content(content: str | Sequence[Any]) -> str | list[Any]:
    """Tool result content with every base64 image block fitted (see `fit_image`); notes
    about what changed follow the blocks as one text block."""
    if isinstance(content, str):
        return content
    blocks: list[Any] = []
    notes: list[str] = []
    for item in content:
        block = cast("dict[str, Any]", item) if isinstance(item, dict) else None
        found = block.get("source") if block is not None else None
        source = cast("dict[str, Any]", found) if isinstance(found, dict) else None
        if (
            block is None
            or block.get("type") != "image"
            or source is None
            or source.get("type") != "base64"
        ):
            blocks.append(item)
            continue
        fitted = _fit_block(source)
        if fitted.note:
            notes.append(fitted.note)
        if fitted.data is not None:
            blocks.append({**block, "source": fitted.block()["source"]})
    if notes:
        blocks.append({"type": "text", "text": "\n".join(notes)})
    return blocks


def image_tokens(width: int, height: int) -> int:
    """About what an image of `width` × `height` px costs, in tokens, once the API has
    scaled it to what the model sees (`fit_image` sends it at that size already)."""
    scale = _scale(width, height)
    return max(1, math.ceil(round(width * scale) * round(height * scale) / PIXELS_PER_TOKEN))


def image_size(block: Any) -> tuple[int, int] | None:
    """The (width, height) of a base64 image block, read from its header; None when it is
    not one or cannot be read."""
    from PIL import Image, UnidentifiedImageError

    found = cast("dict[str, Any]", block).get("source") if isinstance(block, dict) else None
    source = cast("dict[str, Any]", found) if isinstance(found, dict) else None
    if source is None or source.get("type") != "base64":
        return None
    data = source.get("data")
    try:
        raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
        with Image.open(io.BytesIO(raw)) as image:
            return image.size
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError):
        return None
    except Image.DecompressionBombError:
        return None


def _fit_block(source: dict[str, Any]) -> FittedImage:
    declared = source.get("media_type")
    declared = declared if isinstance(declared, str) else None
    data = source.get("data")
    try:
        raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
    except (binascii.Error, ValueError):
        return FittedImage(None, declared or "", "[an image was left out: not valid base64]")
    return fit_image(raw, declared=declared)
