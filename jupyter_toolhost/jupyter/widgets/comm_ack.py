"""Widget messages answered while a cell awaits: why typed text used to arrive as one letter.

A widget front end (`@jupyter-widgets/base`: JupyterLab, Notebook 7, VS Code, Voilà) keeps
at most one state update per widget in flight. Having sent one, it holds every later
change of that widget back until the kernel publishes an `idle` status whose parent is the
message it sent; then it sends the newest state it held. ipykernel 7.4 handles comm
messages that arrive while an async cell awaits (the path `%%agent` relies on), but beside
the cell, without the busy/idle pair it publishes around every other message. So the first
keystroke in a prompt's reason box reached the kernel, and every later one waited for an
`idle` that never came: "use notes.md instead" arrived as "u" when Deny was clicked, and an
AskUserQuestion "Other" answer as its first letter.

`acknowledging(shell)` closes that gap at its source: for as long as it is entered (an
approval prompt, an AskUserQuestion form), each `comm_msg` the kernel handles is followed by the
`idle` status a front end waits for, with that message as its parent, after the handler
ran (so any echo of the new state comes first). Nothing else of the kernel is touched, and
the kernel's own handler is put back on exit. It uses only the kernel's public parts: its
`shell_handlers` table, `session`, `iopub_socket` and `ident`. With no kernel (plain
IPython, a core test) it does nothing.

Even with every update answered, one may still be on its way when a decision arrives: an
update the front end held back is sent when the answer to the previous one reaches it, and a
click sent before that answer overtakes it. `TypingWatch` covers that last round trip: a
decision that reads a text box first waits until the box has been quiet for
`SETTLE_SECONDS` (at once when the last keystroke was longer ago, as it is for a person).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Iterable, Iterator
from typing import Any

from IPython.core.getipython import get_ipython

SETTLE_SECONDS = 0.5
"""How long a text box must have been quiet before a decision reads it. An update held back
by the front end follows the answer to the previous one by one round trip on the kernel's
websocket (milliseconds on one machine); half a second leaves room for a loaded one."""
SETTLE_LIMIT = 3.0
"""The longest a decision waits for a box that keeps changing (someone still typing)."""


@contextlib.contextmanager
def acknowledging(shell: Any) -> Iterator[None]:
    """While entered, every widget message the kernel of `shell` handles is answered with
    the `idle` status the front end waits for (see the module docstring). `shell` None: the
    running IPython's. Entries may overlap (prompts of calls that run at once): the
    kernel's own handler is put back when the last one exits."""
    if shell is None:
        shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    handlers = getattr(kernel, "shell_handlers", None)
    current = handlers.get("comm_msg") if isinstance(handlers, dict) else None
    if kernel is None or current is None:
        yield
        return
    assert isinstance(handlers, dict)
    answered = current if isinstance(current, _Answering) else _Answering(kernel, current)
    handlers["comm_msg"] = answered
    answered.users += 1
    try:
        yield
    finally:
        answered.users -= 1
        if answered.users == 0 and handlers.get("comm_msg") is answered:
            handlers["comm_msg"] = answered.original


class _Answering:
    """The kernel's `comm_msg` handler, followed by the `idle` its front end waits for."""

    def __init__(self, kernel: Any, original: Any) -> None:
        self.kernel = kernel
        self.original = original
        self.users = 0

    async def __call__(self, stream: Any, idents: Any, msg: Any) -> None:
        try:
            result = self.original(stream, idents, msg)
            if inspect.isawaitable(result):
                await result
        finally:
            _publish_idle(self.kernel, msg)


def _publish_idle(kernel: Any, parent: Any) -> None:
    """The `idle` status with `parent` as its parent, as the kernel publishes after a message."""
    session, socket = getattr(kernel, "session", None), getattr(kernel, "iopub_socket", None)
    if session is None or socket is None or not isinstance(parent, dict):
        return
    with contextlib.suppress(Exception):  # a closing kernel: nothing left to answer
        session.send(
            socket,
            "status",
            {"execution_state": "idle"},
            parent=parent,
            ident=f"kernel.{kernel.ident}.status".encode(),
        )


class TypingWatch:
    """When the front end last changed any of some text boxes (their `value`)."""

    def __init__(self, boxes: Iterable[Any]) -> None:
        self.last = float("-inf")
        self.boxes = list(boxes)
        for box in self.boxes:
            box.observe(self._changed, names="value")

    def _changed(self, _change: Any) -> None:
        self.last = time.monotonic()

    async def settled(self, *, quiet: float = SETTLE_SECONDS, limit: float = SETTLE_LIMIT) -> None:
        """Return once no box changed for `quiet` seconds (or after `limit` seconds)."""
        deadline = time.monotonic() + limit
        while True:
            wait = min(self.last + quiet, deadline) - time.monotonic()
            if wait <= 0:
                return
            await asyncio.sleep(wait)  # a keystroke meanwhile moves `last`: look again

    def close(self) -> None:
        for box in self.boxes:
            box.unobserve(self._changed, names="value")
