"""The loop's settings, a run's running totals and what a run returns (see `loop`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.context import AbortSignal
from ..disclosure.deferral import DisclosureOption
from ..model.base import Usage
from ..model.prompt_cache import DEFAULT_CACHE_POLICY, CachePolicy
from .budget import BudgetGuard
from .events import EventSink, LoopEvent

NOT_STARTED = "Not run: the response stopped before this call could start"
CUT_BY_MAX_TOKENS = (
    "Not run: the response reached max_tokens while writing this call, so its input may be "
    "incomplete. Call it again, with less output before it."
)
STREAM_BROKE_NOTE = (
    "(The previous response was cut off by a connection problem after the tool calls "
    "above. Continue from here.)"
)


@dataclass
class LoopSettings:
    """Limits and knobs of the loop."""

    max_turns: int = 100
    """Model responses per run."""
    max_tokens: int = 8192
    """`max_tokens` of each request."""
    time_budget_s: float | None = None
    """Wall-clock seconds per run; when spent, the run is interrupted and returns."""
    stream_retries: int = 3
    retry_backoff_s: float = 1.0
    """The first retry waits this long; each further one twice as long (at most 30 s)."""
    compact_threshold_tokens: int | None = 150_000
    """Compact before a request when the previous one used more context than this."""
    compact_max_tokens: int = 4096
    disclosure: DisclosureOption = "auto"
    """How deferred tools reach the model (`disclosure.resolve_disclosure`): "auto" (the
    API's `defer_loading` when the model supports it, else "discovered"),
    "defer_loading" (a discovery keeps the prompt cache), "discovered" (found tools join
    `tools`; any endpoint), "server_bm25" / "server_regex" (the API's own tool search)."""
    thinking: dict[str, Any] | None = None
    """The API's `thinking` object, sent as it is with every request of the conversation
    (not with compaction's summary request); None (the default): off. With a budget, each
    request's `max_tokens` is `max_tokens` plus the budget (`thinking.request_max_tokens`)."""
    context_management: dict[str, Any] | None = None
    """The API's `context_management` object (a beta), sent with the same requests."""
    cache_policy: CachePolicy = DEFAULT_CACHE_POLICY
    """Which prompt-cache breakpoints live an hour (`prompt_cache.CachePolicy`): by
    default none until the session has paused for more than 5 minutes, then the tools, the
    system prompt and the conversation before the running cell, so they survive the next
    pause; ``"cell"`` does that from the start, ``"5m"`` or ``"1h"`` for every mark."""
    clear_old_results: bool = True
    """Replace old tool results by a note naming their saved copy when that pays for
    itself in cache reads (`clearing`)."""
    clock: Callable[[], float] = time.monotonic
    """Seconds, for the time between requests (a pause); a test moves its own."""
    budget: BudgetGuard | None = None
    """Caps on what a run (a cell), the session and the day may spend (`budget`): checked
    before each request; None: no cap."""


class RunResult(str):
    """The final text of a run (it *is* that `str`), with why and how the run ended.

    `stop_reason` is the API's (`end_turn`, `max_tokens`, `refusal`, `stop_sequence`, ...)
    or the loop's own: `max_turns`, `time_budget`, `hook_blocked` (a UserPromptSubmit hook
    blocked the prompt; nothing was sent), `hook_stopped` (a Stop hook said
    ``continue: false``).
    """

    stop_reason: str
    usage: Usage
    cost_usd: float | None
    turns: int

    def __new__(
        cls, text: str, *, stop_reason: str, usage: Usage, cost_usd: float | None, turns: int
    ) -> RunResult:
        result = super().__new__(cls, text)
        result.stop_reason = stop_reason
        result.usage = usage
        result.cost_usd = cost_usd
        result.turns = turns
        return result

    @property
    def text(self) -> str:
        return str(self)


@dataclass
class RunState:
    """One run's sinks, abort signal and running totals."""

    sinks: list[EventSink[LoopEvent]]
    abort: AbortSignal
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    turns: int = 0
    text: str = ""
    stop_continuations: int = 0
    """Continuations Stop hooks forced in this run."""

    def result(self, stop_reason: str) -> RunResult:
        return RunResult(
            self.text,
            stop_reason=stop_reason,
            usage=self.usage,
            cost_usd=self.cost_usd,
            turns=self.turns,
        )
