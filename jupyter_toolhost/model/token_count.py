"""Counting the input tokens of a sent request, part by part, with the API's endpoint.

`count_parts(model, body)` asks `POST /v1/messages/count_tokens` four times: a minimal
request (one user message "."), the same with the body's system prompt, the same with its
tools, and the whole body's countable fields (system, tools, tool_choice, thinking,
messages). The system prompt's and the tools' tokens are their calls less the minimal one;
the messages' are the whole less those two, so they include the request's fixed overhead
and the definitions of deferred tools that `tool_reference` blocks load where they stand.

It runs on the synchronous `anthropic` client, made with the key and base URL of the
model's own async client: a `%agent` line returns its display at once, it cannot await.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..core.results import describe_error
from .anthropic_model import AnthropicModel
from .base import ModelError

COUNTED = ("system", "tools", "tool_choice", "thinking", "messages")
"""The body's fields the endpoint takes (besides `model`)."""
PROBE = [{"role": "user", "content": "."}]
TIMEOUT_S = 20.0


@dataclass(frozen=True, slots=True)
class PartTokens:
    """Input tokens of one request as the API counts them."""

    system: int
    tools: int
    messages: int
    """The messages with the request's fixed overhead: `total - system - tools`."""
    total: int


def can_count(model: object) -> TypeGuard[AnthropicModel]:
    """Whether `model` is the Anthropic client with a key, so the endpoint can be asked."""
    if not isinstance(model, AnthropicModel):
        return False
    try:
        model.client  # noqa: B018 (made on first use; raises without a key)
    except ModelError:
        return False
    return True


def count_parts(model: AnthropicModel, body: Mapping[str, Any]) -> PartTokens:
    """The tokens of `body`'s parts, from the endpoint; raises `ModelError` if it fails."""
    import anthropic

    settings = model.client
    try:
        with anthropic.Anthropic(
            api_key=settings.api_key,
            auth_token=settings.auth_token,
            base_url=settings.base_url,
            max_retries=1,
            timeout=TIMEOUT_S,
        ) as client:

            def count(**fields: Any) -> int:
                found = client.messages.count_tokens(model=body["model"], **fields)
                return int(found.input_tokens)

            minimal = count(messages=PROBE)
            system = (
                count(system=body["system"], messages=PROBE) - minimal if "system" in body else 0
            )
            tools = count(tools=body["tools"], messages=PROBE) - minimal if "tools" in body else 0
            total = count(**{key: body[key] for key in COUNTED if key in body})
    except anthropic.AnthropicError as exc:
        raise ModelError(f"count_tokens failed: {describe_error(exc)}") from exc
    return PartTokens(system, tools, total - system - tools, total)
