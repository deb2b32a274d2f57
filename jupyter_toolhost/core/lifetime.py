"""`Lifetime`: what a conversation set going that outlives one prompt, and how it stops.

Scheduled prompts, background subagents and background shell commands run on after the
call that started them. Each tool that starts such work registers, once per conversation,
what to do when the conversation ends (`%%agent --new`, `%agent reset`, a kernel shutdown,
`Session.close`) and when the person presses stop (a kernel interrupt). The session and the
notebook host only call `end()` and `interrupt()`; they never reach into a tool's registry.

Hooks run synchronously and must stop their work at once: cancel the asyncio tasks, fire
the abort signals, kill the process groups. Anything slower (awaiting a cancelled task's
end) is left to the event loop. Each hook returns one line per piece of work it stopped (or
that goes on, for `interrupt`), which the front end shows the person. After `end()`, tools
refuse to start new work for the conversation (`ended`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Hook = Callable[[str], list[str]]
"""Called with a reason ("the conversation ended", ...); returns one line per piece of work."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stopped:
    """What `end()` or `interrupt()` did: lines for the person, by what they are about."""

    stopped: tuple[str, ...] = ()
    """Work that was stopped."""
    going_on: tuple[str, ...] = ()
    """Work that goes on (on an interrupt: the schedule of scheduled prompts)."""

    def __bool__(self) -> bool:
        return bool(self.stopped or self.going_on)


@dataclass(frozen=True, slots=True)
class _Owner:
    on_end: Hook
    on_interrupt: Hook | None
    going_on: Hook | None


class Lifetime:
    """The end and interrupt hooks of one conversation, shared by its subagents."""

    def __init__(self) -> None:
        self._owners: dict[str, _Owner] = {}
        self._lock = threading.Lock()
        self._ended: str | None = None

    @property
    def ended(self) -> bool:
        """Whether the conversation has ended: no new background work may start."""
        return self._ended is not None

    @property
    def end_reason(self) -> str | None:
        return self._ended

    def register(
        self,
        owner: str,
        *,
        on_end: Hook,
        on_interrupt: Hook | None = None,
        going_on: Hook | None = None,
    ) -> None:
        """Hooks of `owner` (a tool's registry); the first registration of an owner counts.

        `on_end` stops everything the owner holds; `on_interrupt` stops what must not
        outlive a stop button (None: nothing); `going_on` lists what an interrupt leaves
        running, with how to stop it."""
        with self._lock:
            self._owners.setdefault(owner, _Owner(on_end, on_interrupt, going_on))

    def end(self, reason: str) -> Stopped:
        """End the conversation: every owner stops everything. Later calls stop what was
        started since (nothing, when tools honour `ended`)."""
        with self._lock:
            self._ended = self._ended or reason
            owners = list(self._owners.values())
        return Stopped(stopped=_call_all([o.on_end for o in owners], reason))

    def going_on(self) -> tuple[str, ...]:
        """What an interrupt would leave running (the schedules), one line each."""
        with self._lock:
            owners = list(self._owners.values())
        return _call_all([o.going_on for o in owners], "asked")

    def interrupt(self, reason: str) -> Stopped:
        """The stop button: each owner stops what must not outlive it; the rest is listed."""
        with self._lock:
            owners = list(self._owners.values())
        return Stopped(
            stopped=_call_all([o.on_interrupt for o in owners], reason),
            going_on=_call_all([o.going_on for o in owners], reason),
        )


def _call_all(hooks: Sequence[Hook | None], reason: str) -> tuple[str, ...]:
    """Call every hook that is not None, each guarded: one failing hook must not keep the
    others from stopping their work (the failure is logged)."""
    lines: list[str] = []
    for hook in hooks:
        if hook is None:
            continue
        try:
            lines.extend(hook(reason))
        except Exception:
            with contextlib.suppress(Exception):
                _log.exception("a lifetime hook failed")
    return tuple(lines)
