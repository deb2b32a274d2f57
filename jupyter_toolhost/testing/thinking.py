"""Extended thinking on the loopback Messages API server: signing and the API's checks.

Owns what the server does with `thinking`: scripted thinking and redacted_thinking blocks
(`thinking`, `redacted_thinking`), the signatures it puts on them (an HMAC under a key of
its own, so a block changed by a client, or issued by another server, fails), and the
checks the real API applies to a request that carries them, with its wording:

- the `thinking` object itself (type, `budget_tokens` ≥ 1024 and below `max_tokens`),
  and `context_management`, which needs its `anthropic-beta` header;
- every thinking block has its `signature` (redacted: its `data`) exactly as issued;
- an assistant message with thinking blocks starts with one, and a final (prefill)
  assistant message does not end with one;
- with thinking on, the last assistant message of an open tool-use chain (the conversation
  ends on its tool_results) starts with a thinking block. That is what interleaved
  thinking (Claude Code's setting) asks of every step; without it the API asks it of the
  turn's first assistant message, and a script that thinks at every step satisfies both.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_toolhost.model.thinking import (
    THINKING_BLOCKS,
    ThinkingConfigError,
    budget_of,
    check_context_management,
    check_thinking,
    in_tool_chain,
    thinking_on,
)
from jupyter_toolhost.testing.invalid_request import InvalidRequest

__all__ = [
    "CONTEXT_MANAGEMENT_BETA",
    "RedactedThinkingBlock",
    "Signer",
    "ThinkingBlock",
    "check_thinking_request",
    "redacted_thinking",
    "thinking",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_NONCE = 8


@dataclass(frozen=True)
class ThinkingBlock:
    """A scripted thinking block: streamed as `thinking_delta`s, then its signature (with
    ``display: "omitted"`` in the request, only the signature: the text stays hidden)."""

    thinking: str


@dataclass(frozen=True)
class RedactedThinkingBlock:
    """A scripted redacted_thinking block: opaque `data`, sent whole, no deltas."""

    payload: str = "redacted"


def thinking(text: str) -> ThinkingBlock:
    """A thinking content block (the server signs it)."""
    return ThinkingBlock(text)


def redacted_thinking(payload: str = "redacted") -> RedactedThinkingBlock:
    """A redacted_thinking content block (the server seals `payload` into its `data`)."""
    return RedactedThinkingBlock(payload)


class Signer:
    """Signs the thinking a server issues and checks what comes back. Each signature holds
    a nonce (a counter), so equal texts get different signatures, as the API's do."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key if key is not None else secrets.token_bytes(32)
        self._count = itertools.count(1)  # next() on it is atomic: handler threads share it

    def _nonce(self) -> bytes:
        return next(self._count).to_bytes(_NONCE, "big")

    def _mac(self, kind: bytes, nonce: bytes, payload: bytes) -> bytes:
        return hmac.new(self.key, kind + nonce + payload, hashlib.sha256).digest()

    def signature(self, text: str) -> str:
        nonce = self._nonce()
        return base64.b64encode(nonce + self._mac(b"thinking", nonce, _utf8(text))).decode()

    def redacted_data(self, payload: str) -> str:
        nonce = self._nonce()
        body = _utf8(payload)
        return base64.b64encode(nonce + self._mac(b"redacted", nonce, body) + body).decode()

    def valid_signature(self, text: object, signature: object) -> bool:
        raw = _decode(signature)
        if raw is None or len(raw) != _NONCE + 32 or not isinstance(text, str):
            return False
        nonce, mac = raw[:_NONCE], raw[_NONCE:]
        return hmac.compare_digest(mac, self._mac(b"thinking", nonce, _utf8(text)))

    def valid_data(self, data: object) -> bool:
        raw = _decode(data)
        if raw is None or len(raw) < _NONCE + 32:
            return False
        nonce, mac, body = raw[:_NONCE], raw[_NONCE : _NONCE + 32], raw[_NONCE + 32 :]
        return hmac.compare_digest(mac, self._mac(b"redacted", nonce, body))

    def render(
        self, block: ThinkingBlock | RedactedThinkingBlock, *, omitted: bool
    ) -> dict[str, Any]:
        """The block as the response carries it."""
        if isinstance(block, RedactedThinkingBlock):
            return {"type": "redacted_thinking", "data": self.redacted_data(block.payload)}
        shown = "" if omitted else block.thinking
        return {"type": "thinking", "thinking": shown, "signature": self.signature(shown)}


def _utf8(text: str) -> bytes:
    """The text's bytes; a lone surrogate (JSON allows one) is signed as it is."""
    return text.encode("utf-8", "surrogatepass")


def _decode(value: object) -> bytes | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return None


def thinking_tokens(blocks: list[ThinkingBlock | RedactedThinkingBlock]) -> int:
    """Synthetic thinking tokens of a turn: a quarter of each block's (hidden) text."""
    sizes = [
        len(block.thinking if isinstance(block, ThinkingBlock) else block.payload)
        for block in blocks
    ]
    return sum(max(1, size // 4) for size in sizes)


def omitted(body: Mapping[str, Any]) -> bool:
    """Whether the request asked for thinking without its text (``display: "omitted"``)."""
    config = body.get("thinking")
    return isinstance(config, Mapping) and config.get("display") == "omitted"


# ── checks ────────────────────────────────────────────────────────────────────────────


def check_thinking_request(
    body: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    count_tokens: bool,
    signer: Signer | None,
    headers: Mapping[str, str] | None,
) -> None:
    """Raise `InvalidRequest` for what the API refuses about thinking in this request."""
    config = _check_options(body, count_tokens=count_tokens, headers=headers)
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and isinstance(message["content"], list):
            _check_blocks(index, message["content"], signer)
    _check_final(messages, config)
    chain = in_tool_chain(messages)
    if thinking_on(config) and chain is not None:
        content = messages[chain]["content"]
        first = content[0]["type"] if isinstance(content, list) and content else "text"
        if first not in THINKING_BLOCKS:
            raise InvalidRequest(
                f"messages.{chain}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{first}`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block (preceeding the lastmost set of `tool_use` "
                "and `tool_result` blocks). We recommend you include thinking blocks from "
                "previous turns. To avoid this requirement, disable `thinking`. Please consult "
                f"our documentation at {DOCS}"
            )


def _check_options(
    body: dict[str, Any], *, count_tokens: bool, headers: Mapping[str, str] | None
) -> dict[str, Any] | None:
    try:
        config = check_thinking(body.get("thinking"))
        if "context_management" in body:
            betas = (headers or {}).get("anthropic-beta", "")
            if headers is not None and CONTEXT_MANAGEMENT_BETA not in betas.split(","):
                raise InvalidRequest("context_management: Extra inputs are not permitted")
            check_context_management(body["context_management"], config)
    except ThinkingConfigError as exc:
        raise InvalidRequest(str(exc)) from None
    budget = budget_of(config)
    if budget and not count_tokens and body["max_tokens"] <= budget:
        raise InvalidRequest(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {DOCS}#max-tokens-and-context-window-size"
        )
    return config


def _check_blocks(index: int, content: list[dict[str, Any]], signer: Signer | None) -> None:
    found = False
    for position, block in enumerate(content):
        where = f"messages.{index}.content.{position}"
        if block["type"] == "thinking":
            found = True
            for field in ("thinking", "signature"):
                _check_string(block, field, f"{where}.thinking.{field}")
            if signer is not None and not signer.valid_signature(
                block["thinking"], block["signature"]
            ):
                raise InvalidRequest(f"{where}: Invalid `signature` in `thinking` block")
        elif block["type"] == "redacted_thinking":
            found = True
            _check_string(block, "data", f"{where}.redacted_thinking.data")
            if signer is not None and not signer.valid_data(block["data"]):
                raise InvalidRequest(f"{where}: Invalid `data` in `redacted_thinking` block")
    if found and content[0]["type"] not in THINKING_BLOCKS:
        raise InvalidRequest(
            f"messages.{index}.content.0: If an assistant message contains any thinking "
            "blocks, the first block must be thinking or redacted_thinking. Found "
            f"{content[0]['type']}."
        )


def _check_string(block: dict[str, Any], field: str, where: str) -> None:
    if field not in block:
        raise InvalidRequest(f"{where}: Field required")
    if not isinstance(block[field], str):
        raise InvalidRequest(f"{where}: Input should be a valid string")


def _check_final(messages: list[dict[str, Any]], config: dict[str, Any] | None) -> None:
    index = len(messages) - 1
    content = messages[index]["content"]
    if messages[index]["role"] != "assistant" or not isinstance(content, list) or not content:
        return
    if not thinking_on(config):
        for position, block in enumerate(content):
            if block["type"] in THINKING_BLOCKS:
                raise InvalidRequest(
                    f"messages.{index}.content.{position}: When thinking is disabled, an "
                    "`assistant` message in the final position cannot contain `thinking`. To "
                    "use thinking blocks, enable `thinking` in your request."
                )
    if content[-1]["type"] in THINKING_BLOCKS:
        raise InvalidRequest(
            f"messages.{index}: The final block in an assistant message cannot be `thinking`."
        )
