"""What each tool result adds to the conversation, and what carrying it has cost since.

**Tokens, measured where they can be.** The request after a batch reads what the request
before it read, that request's answer, and the new user message (the batch's tool_result
blocks, and any text that came with them). So the growth of the context between the two
requests, less the answer's output tokens, is what the new user message costs, as the API
counted it. It is shared among that message's blocks in proportion to their estimated size,
and each result takes its share: `ResultSize(measured=True)`. When the growth does not fit
the estimate (within half to twice of it: old results were cleared, the conversation was
compacted, thinking blocks were dropped) or there is no next request (an interrupt, a
budget stop), the result keeps the estimate: about four characters a token (the rule the
budget check and the request view use), and width × height / 750 for an image at the size
the API bills (`core.images.image_tokens`; images are sent at that size already).

**Cost, shared.** Every request reads every result still in the conversation. Each request's
input cost (uncached, cache writes and cache reads at their prices, `model.pricing`) is
shared among what it read in proportion to tokens, so a result's cost is the sum of its
shares over the requests that carried it. A cleared result then weighs only its note, and a
result compacted away weighs nothing. A model without a list price gives no cost (None).
`%agent cost` ranks the calls by it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..core.history import MessageList, Watch
from ..core.images import image_size, image_tokens
from ..core.json_values import json_array, json_mapping
from ..core.numbers import tokens_added
from ..model.base import Usage
from ..model.pricing import estimate_cost
from .clearing import CLEARED_PREFIX
from .events import ResultSize

__all__ = ["CallCost", "ResultLedger", "estimate_tokens"]

CHARS_PER_TOKEN = 4
MEASURED_RANGE = (0.5, 2.0)
"""A measured growth is trusted when it is within this factor of the estimate."""


def estimate_tokens(content: object) -> tuple[int, tuple[tuple[int, int], ...]]:
    """About how many tokens `content` (a block, a list of blocks, or a tool result's
    content) adds, and the (width, height) of each image in it. A tool_result block counts
    its own fields too (the id it answers), as the request carries them."""
    images: list[tuple[int, int]] = []
    chars = 0
    extra = 0
    for kind, value in _parts(content):
        if kind == "text":
            chars += len(cast("str", value))
            continue
        size = image_size(value)
        if size is None:
            chars += len(json.dumps(value, ensure_ascii=False, default=str))
        else:
            images.append(size)
            extra += image_tokens(*size)
    return math.ceil(chars / CHARS_PER_TOKEN) + extra, tuple(images)


def _parts(content: object) -> Iterator[tuple[str, object]]:
    """("text", str) for each piece of text in `content`, ("block", block) for the rest
    (an image, a search result, ...); a tool_result block is looked into."""
    if isinstance(content, str):
        yield "text", content
        return
    blocks = json_array(content)
    if blocks is None:
        block = json_mapping(content)
        if block is None:
            yield "text", json.dumps(content, default=str)
            return
        blocks = [block]
    for item in blocks:
        block = json_mapping(item)
        if block is None:
            yield "text", str(item)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            yield "text", cast("str", block["text"])
        elif block.get("type") == "tool_result":
            wrapper = {key: value for key, value in block.items() if key != "content"}
            yield "text", json.dumps(wrapper, ensure_ascii=False, default=str)
            yield from _parts(block.get("content", ""))
        else:
            yield "block", dict(block)


@dataclass(slots=True)
class CallCost:
    """One tool result in the conversation: its tokens and its share of the requests'
    input cost so far."""

    tool_use_id: str
    tool_name: str
    tokens: int
    measured: bool
    images: tuple[tuple[int, int], ...] = ()
    requests: int = 0
    """Requests that carried the result (its note, once cleared)."""
    cost_usd: float | None = 0.0

    @property
    def text(self) -> str:
        return tokens_added(self.tokens, measured=self.measured, images=self.images)


class ResultLedger:
    """The tokens and cost of every tool result of one conversation (see the module)."""

    def __init__(self) -> None:
        self.calls: dict[str, CallCost] = {}
        self._seen = 0
        """How many messages the last reported request sent."""
        self._context = 0
        self._output = 0
        self._carried: dict[str, tuple[int, int]] = {}
        """Each result the last request carried: (its message's index, its tokens there)."""
        self._history: MessageList | None = None
        self._watch = Watch()

    def ranked(self) -> list[CallCost]:
        """The calls, costliest first (by tokens when costs are unknown)."""
        return sorted(
            self.calls.values(), key=lambda c: (c.cost_usd or 0.0, c.tokens), reverse=True
        )

    def reported(
        self, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> list[ResultSize]:
        """A request that sent `messages` used `usage`: size the results it carried first,
        and add its share of cost to every result it carried."""
        sizes = self._measure(messages, usage)
        self._carry(messages, usage, model)
        self._seen = len(messages)
        self._context, self._output = usage.context_tokens, usage.output_tokens
        return sizes

    def _measure(self, messages: Sequence[Mapping[str, Any]], usage: Usage) -> list[ResultSize]:
        new: Sequence[Mapping[str, Any]] = (
            messages[self._seen :] if len(messages) >= self._seen else []
        )
        names: dict[str, str] = {}
        blocks: list[tuple[str | None, int, tuple[tuple[int, int], ...]]] = []
        for message in new:
            content = message.get("content", "")
            if message.get("role") == "assistant":
                for block in _blocks(content):
                    if block.get("type") == "tool_use":
                        names[str(block.get("id"))] = str(block.get("name", ""))
                continue
            for block in _blocks(content):
                tokens, images = estimate_tokens(block)
                result_id = block.get("tool_use_id") if block.get("type") == "tool_result" else None
                blocks.append((None if result_id is None else str(result_id), tokens, images))
        estimated = sum(tokens for _, tokens, _ in blocks)
        growth = usage.context_tokens - self._context - self._output
        low, high = MEASURED_RANGE
        measured = (
            self._context > 0 and estimated > 0 and low * estimated <= growth <= high * estimated
        )
        sizes: list[ResultSize] = []
        for result_id, tokens, images in blocks:
            if result_id is None or result_id in self.calls:
                continue
            share = round(growth * tokens / estimated) if measured else tokens
            name = names.get(result_id, "")
            self.calls[result_id] = CallCost(result_id, name, share, measured, images)
            sizes.append(ResultSize(result_id, share, measured, images))
        return sizes

    def _carry(self, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str) -> None:
        if not self.calls or usage.context_tokens <= 0:
            return
        read = Usage(
            input_tokens=usage.input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_1h_input_tokens=usage.cache_creation_1h_input_tokens,
        )
        input_cost = estimate_cost(model, read)
        for result_id, tokens in self._present(messages).items():
            call = self.calls[result_id]
            call.requests += 1
            if call.cost_usd is not None and input_cost is not None:
                call.cost_usd += input_cost * tokens / usage.context_tokens
            else:
                call.cost_usd = None

    def _present(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """The results `messages` carries, each with the tokens it weighs there (a cleared
        one: its note's). Only the messages added or edited since the last request are read
        again (`MessageList`'s watch); another list is read whole."""
        start = 0
        if isinstance(messages, MessageList) and messages is self._history:
            start = min(self._watch.synced, len(messages))
        elif isinstance(messages, MessageList):
            self._history, self._watch = messages, messages.watch()
        else:
            self._history = None
        for result_id in [i for i, (at, _) in self._carried.items() if at >= start]:
            del self._carried[result_id]
        for index in range(start, len(messages)):
            message = messages[index]
            if message.get("role") != "user":
                continue
            for block in _blocks(message.get("content", "")):
                result_id = str(block.get("tool_use_id"))
                call = self.calls.get(result_id)
                if block.get("type") != "tool_result" or call is None:
                    continue
                content = block.get("content", "")
                texts = [value for kind, value in _parts(content) if kind == "text"]
                cleared = bool(texts) and cast("str", texts[0]).startswith(CLEARED_PREFIX)
                tokens = estimate_tokens(content)[0] if cleared else call.tokens
                self._carried[result_id] = (index, tokens)
        if self._history is not None:
            self._watch.synced = len(messages)
        return {result_id: tokens for result_id, (_, tokens) in self._carried.items()}


def _blocks(content: object) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    found = json_array(content) or []
    return [block for item in found if (block := json_mapping(item)) is not None]
