"""What a conversation sent to the model: the exact body and the usage of each request.

The loop adds one `SentRequest` per model request of its conversation (a turn), before it
streams, and the response's `Usage` once it is complete; compaction's summary requests are
side requests and are not kept. `SentLog` keeps the last `SENT_CAP` turns as compact JSON
text, the way the `anthropic` client writes the body. Consecutive bodies share the text of
what did not change (the system prompt, the tools, each earlier message), so keeping 200
turns of a long conversation costs little more than the conversation itself. Given the
loop's `MessageList`, `SentLog.add` encodes only the messages added or edited since the
previous request (a `Watch` says which), so a turn costs what it added, not the history.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.history import MessageList, Watch
from ..core.json_values import json_array
from ..core.tool import Tool
from ..disclosure.deferral import searches_deferred_tools
from ..model.base import ModelRequest, Usage

SENT_CAP = 200
"""How many turns a conversation keeps (the oldest go first)."""

_Encoded = str | tuple[str, ...]


def encode(value: Any) -> str:
    """Compact JSON, as the `anthropic` client sends it (UTF-8, no spaces)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class Deferral:
    """What deferral kept out of one request."""

    unloaded: tuple[Tool[Any], ...] = ()
    """Deferred tools of the pool whose definitions the model had not been given (not
    sent, or sent with `defer_loading` and not referenced, so not billed)."""
    finder: str | None = None
    """The tool that finds deferred tools (ToolSearch), offered because some are deferred."""


def deferral_of(pool: Iterable[Tool[Any]], unloaded: Sequence[str]) -> Deferral:
    """The `Deferral` of a request built from `pool` that left `unloaded` out."""
    tools = list(pool)
    names = set(unloaded)
    finder = next((tool.name for tool in tools if searches_deferred_tools(tool)), None)
    return Deferral(tuple(tool for tool in tools if tool.name in names), finder)


@dataclass(frozen=True, slots=True)
class SentRequest:
    """One turn's request: `body` (a fresh copy on each access), the response's `usage`
    (None while it streams, or when it failed), and what deferral left out."""

    turn: int
    """The conversation's model requests counted from 1."""
    fields: tuple[tuple[str, _Encoded], ...]
    """The body's keys in order, each with its JSON (the messages one text per message)."""
    usage: Usage | None = None
    deferral: Deferral = Deferral()

    @property
    def body(self) -> dict[str, Any]:
        """The exact request body, `"stream": true` included, as a new dict."""
        return {
            key: [json.loads(m) for m in value] if isinstance(value, tuple) else json.loads(value)
            for key, value in self.fields
        }

    @property
    def size(self) -> int:
        """The body's length in bytes, as sent."""
        return len(encode(self.body).encode())


class SentLog:
    """The last `cap` requests of one conversation, oldest first."""

    def __init__(self, cap: int = SENT_CAP) -> None:
        self.cap = cap
        self.turns = 0
        """Requests added so far (some may have been dropped)."""
        self._kept: list[SentRequest] = []
        self._history: MessageList | None = None
        """The conversation the last body's messages were taken from (None: unknown)."""
        self._watch = Watch()
        self._marks: tuple[int, ...] = ()
        """The messages the last body sent with a breakpoint."""

    def __len__(self) -> int:
        return len(self._kept)

    def add(
        self,
        request: ModelRequest,
        deferral: Deferral = Deferral(),
        *,
        history: Sequence[Mapping[str, Any]] | None = None,
    ) -> SentRequest:
        """Keep the body of `request` as the model client sends it (streaming).

        `history` is the `MessageList` that `request.messages` was just taken from (the
        loop's conversation): the messages not edited since the previous request then
        keep the previous body's text, and only the rest are encoded. Without it (or when
        `request.messages` is not that list's content) every message is encoded."""
        body = {**request.to_api(), "stream": True}
        before = dict(self._kept[-1].fields) if self._kept else {}
        fields: list[tuple[str, _Encoded]] = []
        for key, value in body.items():
            old = before.get(key)
            messages = json_array(value) if key == "messages" else None
            if messages is not None:
                shared = old if isinstance(old, tuple) else ()
                fields.append((key, self._messages(request, messages, shared, history)))
            else:
                text = encode(value)
                fields.append((key, old if isinstance(old, str) and old == text else text))
        self.turns += 1
        record = SentRequest(self.turns, tuple(fields), None, deferral)
        self._kept.append(record)
        del self._kept[: max(0, len(self._kept) - self.cap)]
        return record

    def _messages(
        self,
        request: ModelRequest,
        messages: list[object],
        shared: tuple[str, ...],
        history: Sequence[Mapping[str, Any]] | None,
    ) -> tuple[str, ...]:
        """Each message's JSON as sent (`messages`, breakpoints marked), the unchanged
        leading ones taken from `shared`. A message the previous body sent with a
        breakpoint is encoded again: its mark has moved on."""
        source = request.messages
        marks = request.message_breakpoints()
        moved, self._marks = min(self._marks, default=len(shared)), marks
        if (
            not isinstance(history, MessageList)
            or len(history) != len(source)
            or (source and history[-1] is not source[-1])
        ):
            self._history = None  # not taken from a history whose edits are known
            return tuple(_same(encode(m), shared, i) for i, m in enumerate(messages))
        if history is not self._history:
            self._history, self._watch = history, history.watch()
        kept = min(self._watch.synced, len(shared), moved)
        self._watch.synced = len(history)
        return shared[:kept] + tuple(encode(m) for m in messages[kept:])

    def complete(self, record: SentRequest, usage: Usage) -> None:
        """The response to `record` is complete: keep its usage."""
        for index in range(len(self._kept) - 1, -1, -1):
            if self._kept[index].turn == record.turn:
                self._kept[index] = replace(self._kept[index], usage=usage)
                return

    def get(self, n: int | None = None) -> SentRequest:
        """Turn `n` (from 1; negative counts from the end; None is the last).

        Raises `IndexError`, saying which turns there are, when there is no such turn."""
        if not self._kept:
            raise IndexError("No model request has been sent in this conversation yet.")
        first, last = self._kept[0].turn, self._kept[-1].turn
        kept = f"turns {first}–{last}" if first != last else f"turn {first}"
        if n is None:
            return self._kept[-1]
        if n < 0:
            if -n > len(self._kept):
                raise IndexError(f"There is no turn {n}: {len(self._kept)} are kept ({kept}).")
            return self._kept[n]
        if n == 0:
            raise IndexError("Turns count from 1 (or from the end: -1 is the last).")
        if n > last:
            raise IndexError(f"There is no turn {n} yet: the requests kept are {kept}.")
        if n < first:
            raise IndexError(
                f"Turn {n} is no longer kept: only the last {self.cap} requests are ({kept})."
            )
        return self._kept[n - first]


def _same(text: str, previous: tuple[str, ...], index: int) -> str:
    """`text`, or the equal string the previous body holds at `index` (shared, not copied)."""
    if index < len(previous) and previous[index] == text:
        return previous[index]
    return text
