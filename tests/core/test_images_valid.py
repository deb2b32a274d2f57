"""Images reach the API valid by construction: Read, function tools (and MCP, in
test_mcp_odd_server.py) send images whose media type is their bytes' type, whose base64 text
is under 5 MB and whose sides are at most the size the model sees at full detail.

Each image here is made by Pillow at test time and sent through the real loop and the real
`anthropic` client to the loopback server, which rejects (400) any image the API would
reject and checks it with Pillow itself; the tests read what it received.
"""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.images import VISION_LONG_EDGE
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools

MODEL = "claude-test"


def _encode(image: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def _noise(size: tuple[int, int]) -> Any:
    from PIL import Image

    rng = random.Random(size[0] * 7 + size[1])
    return Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))


async def _read_through_loop(tmp_path: Path, name: str) -> tuple[dict[str, Any], str]:
    """Run Read on `name` through a Session; the image block the server got, and the note."""
    script = [Turn([tool_use("Read", {"file_path": name})]), Turn([text("seen")])]
    with MessagesServer(script) as server:
        session = Session(
            tools=builtin_tools(),
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        assert await session.run(f"Look at {name}.") == "seen"
    assert server.errors == [], server.errors
    result = server.requests[-1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    blocks = result["content"]
    images = [b for b in blocks if b["type"] == "image"]
    notes = " ".join(b["text"] for b in blocks if b["type"] == "text")
    assert len(images) == 1
    return images[0], notes


def _decoded(block: dict[str, Any]) -> Any:
    from PIL import Image

    raw = base64.b64decode(block["source"]["data"])
    return Image.open(io.BytesIO(raw))


async def test_a_png_too_big_for_the_api_is_scaled_and_says_so(tmp_path: Path) -> None:
    raw = _encode(_noise((1700, 1300)), "PNG")
    assert len(base64.b64encode(raw)) > 5 * 1024 * 1024  # the API would refuse it as it is
    (tmp_path / "noise.png").write_bytes(raw)
    block, note = await _read_through_loop(tmp_path, "noise.png")
    image = _decoded(block)
    assert len(block["source"]["data"]) <= 5 * 1024 * 1024
    assert max(image.size) <= VISION_LONG_EDGE
    assert image.format == "PNG" and block["source"]["media_type"] == "image/png"
    assert "noise.png was scaled down from 1700×1300" in note


async def test_a_9000_px_wide_image_is_scaled_to_what_the_model_sees(tmp_path: Path) -> None:
    from PIL import Image

    (tmp_path / "wide.png").write_bytes(_encode(Image.new("RGB", (9000, 300), "green"), "PNG"))
    block, note = await _read_through_loop(tmp_path, "wide.png")
    image = _decoded(block)
    assert image.size == (VISION_LONG_EDGE, round(300 * VISION_LONG_EDGE / 9000))
    assert "9000×300" in note and f"{VISION_LONG_EDGE} px" in note


async def test_a_jpeg_named_png_is_sent_as_jpeg(tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(_encode(_noise((64, 48)), "JPEG"))
    block, note = await _read_through_loop(tmp_path, "photo.png")
    assert block["source"]["media_type"] == "image/jpeg"
    assert _decoded(block).format == "JPEG"
    assert "declared image/png but its bytes are image/jpeg" in note


async def test_a_small_valid_image_is_sent_byte_for_byte(tmp_path: Path) -> None:
    raw = _encode(_noise((32, 32)), "WEBP")
    (tmp_path / "tiny.webp").write_bytes(raw)
    block, note = await _read_through_loop(tmp_path, "tiny.webp")
    assert base64.b64decode(block["source"]["data"]) == raw
    assert block["source"]["media_type"] == "image/webp" and note == ""


class _Nothing(BaseModel):
    pass


async def test_a_tools_images_are_fitted_or_left_out_with_a_note(tmp_path: Path) -> None:
    """A function tool returns a BMP claimed as PNG, a 9000-px PNG and bytes that are no
    image: the request stays valid, the BMP is converted, the wide one scaled, the last
    replaced by a note."""
    from PIL import Image

    def images(input: _Nothing, context: ToolUseContext) -> list[dict[str, Any]]:
        def block(raw: bytes, media: str) -> dict[str, Any]:
            data = base64.b64encode(raw).decode()
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media, "data": data},
            }

        return [
            {"type": "text", "text": "three pictures"},
            block(_encode(Image.new("RGB", (20, 10), "red"), "BMP"), "image/png"),
            block(_encode(Image.new("L", (9000, 90), 128), "PNG"), "image/png"),
            block(b"GIF89a but not really", "image/gif"),
        ]

    tool = build_tool(name="Pictures", input_model=_Nothing, call=images, description="Pics.")
    script = [Turn([tool_use("Pictures", {})]), Turn([text("done")])]
    with MessagesServer(script) as server:
        session = Session(
            tools=[tool],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        assert await session.run("Show me.") == "done"
    assert server.errors == []
    blocks = server.requests[-1].body["messages"][-1]["content"][0]["content"]
    sent = [_decoded(b) for b in blocks if b["type"] == "image"]
    assert [(image.format, image.size) for image in sent] == [
        ("PNG", (20, 10)),
        ("PNG", (VISION_LONG_EDGE, round(90 * VISION_LONG_EDGE / 9000))),
    ]
    notes = blocks[-1]["text"]
    assert "converted from BMP to PNG" in notes
    assert "left out" in notes and "image/gif" in notes


def _pillow_reads(raw: bytes) -> bool:
    from PIL import Image

    try:
        Image.open(io.BytesIO(raw)).load()
    except OSError:
        return False
    return True


def test_every_pillow_mode_and_format_comes_out_valid() -> None:
    """Attack: images in every pixel mode and file format Pillow writes, too wide to send as
    they are, each declared image/png: each comes out as a PNG, JPEG, GIF or WebP that
    matches its media type, within the long edge; a file the installed Pillow cannot read
    back (before Pillow 13, an uncompressed YCbCr TIFF: it reads 4 bytes a pixel where 3
    were written) comes out as the note saying so. Never an exception."""
    from PIL import Image

    from jupyter_toolhost.core.images import fit_image

    api_formats = {
        "PNG": "image/png",
        "JPEG": "image/jpeg",
        "GIF": "image/gif",
        "WEBP": "image/webp",
    }
    tried = 0
    for mode in ["1", "L", "LA", "P", "RGB", "RGBA", "CMYK", "YCbCr", "I", "I;16", "F", "PA"]:
        for fmt in ["PNG", "JPEG", "GIF", "WEBP", "TIFF", "BMP"]:
            try:
                raw = _encode(Image.new(mode, (2000, 50)), fmt)
            except (OSError, ValueError, KeyError):
                continue  # Pillow does not write this mode in this format
            tried += 1
            fitted = fit_image(raw, declared="image/png", name=f"{mode}.{fmt}")
            if not _pillow_reads(raw):
                assert fitted.data is None, (mode, fmt)
                assert "it is not an image the model can read" in fitted.note, fitted.note
                continue
            assert fitted.data is not None, fitted.note
            image = Image.open(io.BytesIO(base64.b64decode(fitted.data)))
            assert api_formats[str(image.format)] == fitted.media_type, (mode, fmt)
            assert max(image.size) <= VISION_LONG_EDGE, (mode, fmt)
    assert tried > 30
