"""The conversation as a list that notes its own edits, so derived state stays incremental.

A loop's conversation only grows at its end (a message appended, the last one replaced by a
longer one); what is derived from it (the discovered tools, the encoded request the sent
log keeps) should cost what changed, not the whole history, on every turn. `MessageList` is
a plain `list` of API messages that tells each `Watch` taken on it the lowest index any
edit touched. A consumer keeps a `Watch`, reads `messages[watch.synced:]` as new, and sets
`watch.synced = len(messages)` once it has caught up. Appending moves nothing, so a
conversation that only grows costs each consumer the new messages alone; any other edit
(`messages[i] = ...`, `del`, `insert`, `pop`, `clear`, slices, `sort`) lowers `synced` to
the first index it touched, and the consumer reads again from there.

A message is a value: edit the conversation by putting a new message in its place
(`messages[i] = {...}`), not by changing a message dict (or its content list) in place,
which no list can see. The loop never changes a message in place; it replaces the last one.
Assigning a new list to `AgentLoop.messages` (compaction, resume) starts over.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any, SupportsIndex

Message = dict[str, Any]


class Watch:
    """How far one consumer has read a `MessageList`: `messages[:synced]` is unchanged
    since it last caught up."""

    __slots__ = ("__weakref__", "synced")

    def __init__(self) -> None:
        self.synced = 0


class MessageList(list[Message]):
    """A `list` of messages whose edits lower the `synced` mark of every `Watch` on it.

    Copies (`copy.copy`, `copy.deepcopy`, `pickle`, slicing) are plain lists."""

    __slots__ = ("_watches",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self._watches: weakref.WeakSet[Watch] = weakref.WeakSet()

    def watch(self) -> Watch:
        """A new mark at 0 (nothing read yet), lowered by every later edit."""
        mark = Watch()
        self._watches.add(mark)
        return mark

    def _touch(self, index: int) -> None:
        for mark in self._watches:
            if index < mark.synced:
                mark.synced = index

    def _at(self, index: SupportsIndex | slice) -> int:
        """The lowest index an edit at `index` touches."""
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return min(start, stop) if step > 0 else max(0, stop + 1)
        position = index.__index__()
        return max(0, position + len(self) if position < 0 else position)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._touch(self._at(index))
        super().__setitem__(index, value)

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        self._touch(self._at(index))
        super().__delitem__(index)

    def __imul__(self, times: SupportsIndex) -> MessageList:
        if times.__index__() < 1:
            self._touch(0)
        super().__imul__(times)
        return self

    def insert(self, index: SupportsIndex, value: Message) -> None:
        self._touch(min(self._at(index), len(self)))
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Message:
        if self:
            self._touch(self._at(index))
        return super().pop(index)

    def remove(self, value: Message) -> None:
        self._touch(self.index(value))
        super().remove(value)

    def clear(self) -> None:
        self._touch(0)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._touch(0)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._touch(0)
        super().reverse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def conversation(messages: Iterable[Message]) -> MessageList:
    """A new `MessageList` holding a shallow copy of each message."""
    return MessageList(dict(m) for m in messages)
