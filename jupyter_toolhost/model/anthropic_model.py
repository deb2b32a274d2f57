"""The Anthropic model: the official async client, streaming, as a `Model`.

This is the only module that imports `anthropic`, and it does so on first use, so importing
the package stays fast. The client's own environment handling applies (`ANTHROPIC_API_KEY`,
`ANTHROPIC_BASE_URL`), and so does its retry of 429/529/5xx answers given before a stream
starts (`max_retries`). What the client does not do is notice a stream that breaks after
it started: it then hands back a fragment with `stop_reason` None, and a reply that ends
before `message_start` fails an assertion. Here such a fragment, an empty reply, a dropped
connection or an error event mid-stream all become `StreamBroken`, carrying the blocks that
did complete, so the loop can retry or resume the turn. A connection that fails before any
response began (refused, unresolved, timed out, an untrusted certificate) was already tried
again by the client: it is `ModelUnreachable`, said once with the address, and not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ..core.json_values import json_object
from ..core.kernel_host import KERNEL_KEY_ENV, kernel_api_key, remote_kernel_hint
from ..core.results import describe_error
from .base import (
    BlockComplete,
    BlockStart,
    ContentBlock,
    MessageComplete,
    MessageStarted,
    ModelAPIError,
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelUnreachable,
    StreamBroken,
    TextChunk,
    ThinkingChunk,
    Usage,
    canonical_block,
)

if TYPE_CHECKING:
    import ssl

    from anthropic import AsyncAnthropic

DEFAULT_MODEL = "claude-sonnet-4-5"
"""Used when neither an option nor `JUPYTER_TOOLHOST_MODEL` names a model."""
MODEL_ENV = "JUPYTER_TOOLHOST_MODEL"
EMPTY_STREAM = "the reply ended before its message started (an empty event stream)"
TRUNCATED_STREAM = "the stream ended before the message was complete"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The `anthropic-beta` value `context_management` needs (anthropic 2.16 has the parameter
only under `client.beta`; Claude Code sends the same value)."""


def default_model_name(option: str | None = None) -> str:
    """The model id: the option, then `JUPYTER_TOOLHOST_MODEL`, then `DEFAULT_MODEL`."""
    return option or os.environ.get(MODEL_ENV) or DEFAULT_MODEL


def has_credentials() -> bool:
    """Whether the client would find a key (or token) in the environment (or the kernel one
    under its gateway-passable name, `kernel_host.KERNEL_KEY_ENV`)."""
    return bool(
        os.environ.get("ANTHROPIC_API_KEY")
        or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        or kernel_api_key()
    )


def credential_sources(
    api_key: str | None = None, environ: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """Where the client's credentials come from, as it reads them: (where, value) for the API
    key (an `api_key` given in Python, else ``ANTHROPIC_API_KEY``, else the gateway-passed
    ``KERNEL_ANTHROPIC_API_KEY``) and for a bearer token (``ANTHROPIC_AUTH_TOKEN``); empty
    when there is none. Nothing else is read (no ``.env`` file). The values are for a
    fingerprint at most (`fingerprint`): never show them."""
    env = os.environ if environ is None else environ
    found: list[tuple[str, str]] = []
    if api_key:
        found.append(("api_key given in Python (AnthropicModel(api_key=...))", api_key))
    elif env.get("ANTHROPIC_API_KEY"):
        found.append(("the environment variable ANTHROPIC_API_KEY", env["ANTHROPIC_API_KEY"]))
    elif kernel_api_key(env):
        where = f"the environment variable {KERNEL_KEY_ENV} (a gateway passes it on)"
        found.append((where, env[KERNEL_KEY_ENV]))
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        where = "the environment variable ANTHROPIC_AUTH_TOKEN (a bearer token)"
        found.append((where, env["ANTHROPIC_AUTH_TOKEN"]))
    return found


FINGERPRINT_MIN = 20
"""A secret shorter than this shows no fingerprint at all (its last 4 would be much of it)."""


def fingerprint(secret: str) -> str:
    """The most of a secret ever shown: "…" and its last 4 characters, for a long one."""
    return f"…{secret[-4:]}" if len(secret) >= FINGERPRINT_MIN else ""


class MissingCredentials(ModelError):
    """No API key: nothing can be sent."""


class AnthropicModel:
    """Streams responses from the Messages API with the official `anthropic` client."""

    supports_defer_loading = True
    """The Messages API expands `tool_reference` blocks to tools sent with `defer_loading`
    (what ``disclosure="auto"`` reads). An endpoint that does not can be given
    ``disclosure="discovered"``."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
        client: AsyncAnthropic | None = None,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._max_retries = max_retries
        self._timeout = timeout
        self._client = client

    @property
    def given_api_key(self) -> str | None:
        """The key given in Python (`api_key=`), if any (else the client reads the
        environment: see `credential_sources`)."""
        return self._api_key

    def credentials(self) -> dict[str, str]:
        """The key or token this model authenticates with, by the variable that holds it
        (without creating the client): the session redacts them from every tool result."""
        found: dict[str, str] = {}
        client = self._client
        api_key = self._api_key or (client.api_key if client is not None else None)
        if api_key:
            found["ANTHROPIC_API_KEY"] = api_key
        token = client.auth_token if client is not None else None
        if token:
            found["ANTHROPIC_AUTH_TOKEN"] = token
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", KERNEL_KEY_ENV):
            value = os.environ.get(name)
            if value and value not in found.values():
                found.setdefault(name, value)
        return found

    @property
    def client(self) -> AsyncAnthropic:
        """The async client, created on first use (this is when `anthropic` is imported)."""
        if self._client is None:
            if self._api_key is None and not has_credentials():
                hint = remote_kernel_hint()
                raise MissingCredentials(
                    "No Anthropic API key: set ANTHROPIC_API_KEY, or replay a recorded "
                    "cassette (CassetteModel(path, mode='replay'))." + (f" {hint}" if hint else "")
                )
            from anthropic import AsyncAnthropic

            self._client = AsyncAnthropic(
                api_key=self._api_key or kernel_api_key(),
                base_url=self._base_url,
                max_retries=self._max_retries,
                timeout=self._timeout,
                http_client=_http_client(self._timeout),
            )
        return self._client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response; see the module docstring for how failures surface."""
        import anthropic
        import httpx
        import httpx2

        transport_errors = (anthropic.APIConnectionError, httpx.TransportError, httpx2.HTTPError)
        complete: list[ContentBlock] = []
        inputs: dict[int, list[str]] = {}
        """Each tool_use block's raw `input_json_delta` pieces, by index (the client's own
        `input` comes from a partial parser, which cannot tell a cut input from a whole one)."""
        started = began = False
        try:
            manager = self.client.messages.stream(**_stream_arguments(request))
            async with manager as stream:
                async for event in stream:
                    started = True
                    began = began or event.type == "message_start"
                    for converted in _convert(event, inputs):
                        if isinstance(converted, BlockComplete):
                            complete.append(converted.block)
                        yield converted
                if not began:  # the client would fail an assertion on it
                    raise StreamBroken(EMPTY_STREAM)
                final = await stream.get_final_message()
        except transport_errors as exc:
            if not started:
                raise ModelUnreachable(self._unreachable(exc)) from exc
            raise StreamBroken(_connection_error(exc), content=complete) from exc
        except anthropic.APIStatusError as exc:
            if started:
                raise StreamBroken(describe_error(exc), content=complete) from exc
            raise ModelAPIError(describe_error(exc), status=exc.status_code) from exc
        if final.stop_reason is None:
            raise StreamBroken(TRUNCATED_STREAM, content=complete)
        yield MessageComplete(_message(final, complete))

    def _unreachable(self, exc: BaseException) -> str:
        where = str(self.client.base_url).rstrip("/")
        tries = self._max_retries + 1
        return (
            f"Could not reach the Anthropic API at {where} ({tries} tries): "
            f"{_connection_error(exc)}. Check ANTHROPIC_BASE_URL, the network and any proxy."
        )


def _http_client(timeout: float) -> Any:
    """The HTTP client the SDK would make itself (its defaults: limits, keep-alive, proxies
    from the environment), but with the process's one TLS context: the SDK makes a new one
    per client, loading every CA certificate again (about 35 ms), and each session has its
    own client. The client is closed when it is collected inside a running event loop, as
    the SDK's own is."""
    return _client_class()(timeout=timeout, verify=tls_context())


@functools.cache
def _client_class() -> Any:
    from anthropic import DefaultAsyncHttpxClient

    class ClosingClient(DefaultAsyncHttpxClient):
        def __del__(self) -> None:
            if self.is_closed:
                return
            with contextlib.suppress(Exception):  # no running loop, or it is closing
                asyncio.get_running_loop().create_task(self.aclose())

    return ClosingClient


def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per trust setting (`SSL_CERT_FILE`, `SSL_CERT_DIR`), made
    as the SDK's HTTP library makes its default one, and shared by every client. Keyed on
    the settings' values: a bundle rewritten in place at the same path is read again by a
    new process (a kernel restart), not by the next session."""
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()


def _connection_error(exc: BaseException) -> str:
    """The SDK says only "Connection error."; the cause at the bottom of the chain says what
    a person can act on (a certificate that is not trusted, a refused connection, a name
    that does not resolve), so it is added."""
    text = describe_error(exc)
    root, seen = exc, {id(exc)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    if root is not exc and str(root) and str(root) not in text:
        text += f" ({describe_error(root)})"
    return text


def _stream_arguments(request: ModelRequest) -> Any:
    """The client's arguments for `request`. `context_management` is a beta the client's
    `messages` resource does not take: it goes in the body, with its `anthropic-beta`."""
    arguments: dict[str, Any] = request.to_api()
    edits = arguments.pop("context_management", None)
    if edits is not None:
        arguments["extra_body"] = {"context_management": edits}
        arguments["extra_headers"] = {"anthropic-beta": CONTEXT_MANAGEMENT_BETA}
    return arguments


def _convert(event: Any, inputs: dict[int, list[str]]) -> list[ModelEvent]:
    match event.type:
        case "message_start":
            usage = event.message.usage
            billed = usage.model_dump(mode="json") if usage is not None else None
            return [MessageStarted(Usage.from_dict(billed))]
        case "content_block_start":
            return [BlockStart(event.index, event.content_block.type)]
        case "content_block_delta" if event.delta.type == "text_delta":
            return [TextChunk(event.index, event.delta.text)]
        case "content_block_delta" if event.delta.type == "thinking_delta":
            return [ThinkingChunk(event.index, event.delta.thinking)]
        case "content_block_delta" if event.delta.type == "input_json_delta":
            inputs.setdefault(event.index, []).append(event.delta.partial_json)
            return []
        case "content_block_stop":
            block = _block(event.content_block)
            whole = input_is_whole(block, "".join(inputs.pop(event.index, ())))
            return [BlockComplete(event.index, block, input_complete=whole)]
        case _:
            return []


def input_is_whole(block: ContentBlock, text: str) -> bool:
    """Whether a finished tool_use block's input is proven whole (`BlockComplete`).

    `text` is the block's raw `input_json_delta` text: it must parse strictly (`json.loads`;
    NaN and Infinity, which are not JSON, are refused) as an object equal to the block's
    `input`. With no text at all the input is whole only when `content_block_start` carried
    a non-empty one (some Messages API compatible endpoints send it that way); the `{}` the
    API puts there before the input streams proves nothing: a `max_tokens` stop before the
    first delta looks the same.
    """
    value = json_object(block.get("input"))
    if block.get("type") != "tool_use" or value is None:
        return False
    if not text:
        return bool(value)
    try:
        parsed = json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):  # not JSON, or nested past what json can read
        return False
    return isinstance(parsed, dict) and parsed == value


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _block(block: Any) -> ContentBlock:
    data = block.model_dump(mode="json", exclude_none=True)
    data.pop("parsed_output", None)
    return canonical_block(data)


def _message(final: Any, complete: list[ContentBlock]) -> Any:
    from .base import AssistantMessage

    usage = Usage.from_dict(final.usage.model_dump(mode="json") if final.usage else None)
    content = complete or [_block(block) for block in final.content]
    return AssistantMessage(content, final.stop_reason, usage, str(final.model or ""))
