"""The loopback server holds every request to the `anthropic` SDK's own request types and the
Messages API's documented limits, so every test that talks to it checks conformance.

These tests attack the validator itself: each body breaks one rule the real API enforces and
must be answered with a 400 in the API's error shape; bodies the SDK builds from its own
types (hypothesis draws them) must pass.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import anthropic
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_toolhost.model.anthropic_model import tls_context
from jupyter_toolhost.testing import MessagesServer, Turn, text

MODEL = "claude-test"
HELLO = [{"role": "user", "content": "hello"}]


def _png(size: tuple[int, int], *, fmt: str = "PNG") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, "orange").save(buffer, format=fmt)
    return buffer.getvalue()


def _image(raw: bytes, media_type: str) -> dict[str, Any]:
    data = base64.b64encode(raw).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _noise_png_base64_over_5mb() -> str:
    import random

    from PIL import Image

    rng = random.Random(31)
    image = Image.frombytes("RGB", (1400, 1000), rng.randbytes(1400 * 1000 * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode()
    assert len(data) > 5 * 1024 * 1024
    return data


BROKEN: dict[str, tuple[dict[str, Any], str]] = {
    "unknown top-level key": ({"temperture": 0.5}, "temperture: Extra inputs are not permitted"),
    "unknown key in a block": (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]}]},
        "messages.0.content.0.x: Extra inputs are not permitted",
    ),
    "unknown key in a tool": (
        {"tools": [{"name": "t", "input_schema": {"type": "object"}, "strictt": True}]},
        "tools.0.strictt: Extra inputs are not permitted",
    ),
    "tool without input_schema (inside an Iterable)": (
        {"tools": [{"name": "t"}]},
        "tools.0.input_schema: Field required",
    ),
    "unknown key in a tool_result's content (Iterable in Iterable)": (
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "ok", "score": 1}],
                        }
                    ],
                },
            ],
            "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        },
        "messages.2.content.0.content.0.score: Extra inputs are not permitted",
    ),
    "system block of the wrong type": (
        {"system": [{"type": "image", "text": "x"}]},
        "system.0.type: Input should be 'text'",
    ),
    "property key with a space": (
        {"tools": [{"name": "t", "input_schema": {"properties": {"file path": {}}}}]},
        "tools.0.input_schema.properties: Property keys should match pattern",
    ),
    "nested property key with a colon": (
        {
            "tools": [
                {
                    "name": "t",
                    "input_schema": {
                        "type": "object",
                        "properties": {"a": {"type": "object", "properties": {"ns:key": {}}}},
                    },
                }
            ]
        },
        "Property keys should match pattern",
    ),
    "duplicate tool names": (
        {"tools": [{"name": "t", "input_schema": {}}, {"name": "t", "input_schema": {}}]},
        "Tool names must be unique",
    ),
    "JPEG bytes declared as PNG": (
        {
            "messages": [
                {"role": "user", "content": [_image(_png((8, 8), fmt="JPEG"), "image/png")]}
            ]
        },
        "Image does not match the provided media type image/png",
    ),
    "9000 px wide image": (
        {"messages": [{"role": "user", "content": [_image(_png((9000, 4)), "image/png")]}]},
        "At least one of the image dimensions exceed max allowed size: 8000 pixels",
    ),
    "bytes that are no image": (
        {"messages": [{"role": "user", "content": [_image(b"\x89PNG not really", "image/png")]}]},
        "Could not process image",
    ),
    "media type the API does not take": (
        {"messages": [{"role": "user", "content": [_image(_png((8, 8), fmt="BMP"), "image/bmp")]}]},
        "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    ),
}


@pytest.fixture(scope="module")
def server() -> Any:
    with MessagesServer(lambda body: Turn([text("ok")])) as running:
        yield running


@pytest.mark.parametrize("case", list(BROKEN))
async def test_a_body_the_api_rejects_gets_its_400(case: str, server: MessagesServer) -> None:
    change, expected = BROKEN[case]
    body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, **change}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        response = await http.post("/v1/messages", json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert expected in error["error"]["message"]


async def test_an_image_over_5_mb_of_base64_is_rejected(server: MessagesServer) -> None:
    data = _noise_png_base64_over_5mb()
    source = {"type": "base64", "media_type": "image/png", "data": data}
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "image", "source": source}]}],
    }
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        response = await http.post("/v1/messages", json=body)
    assert response.status_code == 400
    assert "image exceeds 5 MB maximum" in response.json()["error"]["message"]


async def test_a_beta_key_needs_the_beta_types(server: MessagesServer) -> None:
    """`context_management` exists only in the SDK's beta types: accepted with an
    `anthropic-beta` header, an unknown key without one."""
    body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, "context_management": {}}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        plain = await http.post("/v1/messages", json=body)
        beta = await http.post(
            "/v1/messages",
            json=body,
            headers={"anthropic-beta": "context-management-2025-06-27"},
        )
    assert plain.status_code == 400
    assert "context_management" in plain.json()["error"]["message"]
    assert beta.status_code == 200, beta.text


async def test_every_valid_sdk_call_passes(server: MessagesServer) -> None:
    """The SDK's own client, with images of every accepted type, a tool with odd but valid
    keys, a system list and metadata: nothing here is flagged."""
    images = [
        _image(_png((10, 10), fmt=fmt), media)
        for fmt, media in [
            ("PNG", "image/png"),
            ("JPEG", "image/jpeg"),
            ("GIF", "image/gif"),
            ("WEBP", "image/webp"),
        ]
    ]
    client = anthropic.AsyncAnthropic(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=tls_context()),
    )
    try:
        message = await client.messages.create(
            model=MODEL,
            max_tokens=10,
            system=[{"type": "text", "text": "be brief"}],
            metadata={"user_id": "u1"},
            messages=[{"role": "user", "content": [*images, {"type": "text", "text": "what?"}]}],  # type: ignore[list-item]
            tools=[
                {
                    "name": "t",
                    "input_schema": {"type": "object", "properties": {"a.b-c_1": {}}},
                }
            ],
        )
    finally:
        await client.close()
    assert message.content[0].type == "text"


_TEXTS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40
).filter(lambda value: value.strip() == value and value.strip() != "")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(_TEXTS, min_size=1, max_size=4),
    stop=st.none() | st.lists(_TEXTS, max_size=3),
    user=st.none() | _TEXTS,
)
def test_bodies_the_sdk_serialises_pass(
    server: MessagesServer, texts: list[str], stop: list[str] | None, user: str | None
) -> None:
    """Whatever the SDK itself sends for a valid call is accepted (no false alarms)."""
    errors_before = len(server.errors)
    options: dict[str, Any] = {}
    if stop is not None:
        options["stop_sequences"] = stop
    if user is not None:
        options["metadata"] = {"user_id": user}
    content = [{"type": "text", "text": value} for value in texts]
    sdk = anthropic.Anthropic(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=tls_context()),  # (made once: 35 ms)
    )
    with sdk as client:
        message = client.messages.create(
            model=MODEL,
            max_tokens=5,
            messages=[{"role": "user", "content": content}],  # type: ignore[list-item]
            **options,
        )
    assert message.content[0].type == "text"
    assert server.errors[errors_before:] == []


def test_a_peer_server_skips_only_the_sdk_types() -> None:
    """A benchmark peer (Claude Code) sends a key the installed SDK no longer lists: the
    default server refuses it; a peer's server (`sdk_types=False`) takes it, and still
    refuses what the documented limits forbid. The key is one no release lists (which
    keys a release lists changes: `temperature` left the types in a later one)."""
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "peer_only_option": 1,
        "messages": [{"role": "user", "content": "hi"}],
    }
    bad_key = {**body, "tools": [{"name": "t", "input_schema": {"properties": {"a b": {}}}}]}
    with MessagesServer([Turn([text("ok")])]) as strict:
        refused = httpx.post(f"{strict.base_url}/v1/messages", json=body, timeout=30)
    assert refused.status_code == 400 and "peer_only_option" in refused.text
    with MessagesServer([Turn([text("ok")])], sdk_types=False) as peer:
        taken = httpx.post(f"{peer.base_url}/v1/messages", json=body, timeout=30)
        limited = httpx.post(f"{peer.base_url}/v1/messages", json=bad_key, timeout=30)
    assert taken.status_code == 200, taken.text
    assert limited.status_code == 400, limited.text
