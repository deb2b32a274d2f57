"""Budgets: caps on what a cell, a session and a user's day may spend, checked before each
request.

A cap is in US dollars at list prices (`model.pricing`) or in tokens (every token a request
reads, cached or not, plus what it writes). The policy (`permissions.settings.managed`) and
the user's own settings (``"budgets"`` in a settings file, the same field names) both set
caps; for each one the lower wins.

**When it stops.** Before each request the loop asks `BudgetGuard.refusal` with what the
request is expected to cost: the context the previous request read plus what was added
since, and the average output of the cell's requests so far. When what was spent plus that
would pass a cap, no request is sent and the cell ends with the cap's name, what was spent,
and where to raise it. Every tool call of the cell already has its result by then, so the
conversation goes on in the next cell once the cap allows. A cap can be passed by one
request's own output at most: what a response writes is known only once it is written.

**The day's count** is kept per user in ``~/.toolhost/usage/<YYYY-MM-DD>.json`` (the
kernel's local date), written under a lock by every kernel of the user, 0600 in a 0700
folder: other users cannot read or change it, and ``~/.toolhost`` is read-only to the Bash
sandbox and protected from the file tools, so the agent cannot reset it.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from ..core.json_values import json_object
from ..model.base import Usage
from ..model.pricing import estimate_cost
from ..permissions.settings.managed import Budgets

USAGE_FOLDER = "usage"

__all__ = ["BudgetGuard", "DayCounter", "Spent"]


@dataclass(slots=True)
class Spent:
    """Dollars (None once a model had no list price) and tokens."""

    usd: float | None = 0.0
    tokens: int = 0

    def add(self, model: str, usage: Usage) -> None:
        cost = estimate_cost(model, usage)
        self.usd = None if self.usd is None or cost is None else self.usd + cost
        self.tokens += tokens_of(usage)


def tokens_of(usage: Usage) -> int:
    """Every token a request read (cached or not) and wrote."""
    return usage.context_tokens + usage.output_tokens


class DayCounter:
    """A user's spending per day, shared by every kernel of the user through a file."""

    def __init__(self, home: Path) -> None:
        self.folder = home / ".toolhost" / USAGE_FOLDER

    def _file(self, day: datetime.date) -> Path:
        return self.folder / f"{day.isoformat()}.json"

    @contextlib.contextmanager
    def _locked(self, day: datetime.date) -> Generator[Path]:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.folder, 0o700)
        path = self._file(day)
        lock = os.open(self.folder / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)

    def read(self, day: datetime.date | None = None) -> Spent:
        """What was spent on `day` (today by default); a missing or broken file is nothing
        spent only when it is missing: a broken one counts as the cap reached."""
        path = self._file(day or datetime.date.today())
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Spent()
        except (OSError, ValueError):
            return Spent(usd=float("inf"), tokens=2**62)
        found = json_object(data) or {}
        usd, tokens = found.get("usd"), found.get("tokens")
        if not isinstance(usd, int | float) or not isinstance(tokens, int):
            return Spent(usd=float("inf"), tokens=2**62)
        return Spent(float(usd), tokens)

    def add(self, model: str, usage: Usage, day: datetime.date | None = None) -> Spent:
        """Count one response; returns the day's total."""
        day = day or datetime.date.today()
        with self._locked(day) as path:
            total = self.read(day)
            if total.usd is not None and total.usd == float("inf"):
                total = Spent()  # a broken file is replaced by what is known from now on
            cost = estimate_cost(model, usage)
            total.usd = (total.usd or 0.0) + (cost or 0.0)
            total.tokens += tokens_of(usage)
            temporary = path.with_suffix(".tmp")
            fd = os.open(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"usd": total.usd, "tokens": total.tokens}, out)
            os.replace(temporary, path)
            return total


@dataclass(slots=True)
class BudgetGuard:
    """The caps of one session and what was spent against them."""

    budgets: Budgets
    sources: dict[str, str] = field(default_factory=dict[str, str])
    """Each cap's name → where it was set (the policy file or the user's settings file)."""
    day: DayCounter | None = None
    session: Spent = field(default_factory=Spent)
    cell: Spent = field(default_factory=Spent)
    _outputs: list[int] = field(default_factory=list[int])

    def start_cell(self) -> None:
        self.cell = Spent()
        self._outputs = []

    def record(self, model: str, usage: Usage) -> None:
        """Count one response against every cap."""
        self.cell.add(model, usage)
        self.session.add(model, usage)
        self._outputs.append(usage.output_tokens)
        if self.day is not None and self._counts_days():
            self.day.add(model, usage)

    def _counts_days(self) -> bool:
        return self.budgets.day_usd is not None or self.budgets.day_tokens is not None

    def expected(self, context_tokens: int) -> Usage:
        """What the next request is expected to use: `context_tokens` read, and the
        average output of the cell's requests so far."""
        output = sum(self._outputs) // len(self._outputs) if self._outputs else 0
        return Usage(input_tokens=context_tokens, output_tokens=output)

    def refusal(self, model: str, next_request: Usage) -> str | None:
        """Why the next request may not be sent (None when every cap allows it)."""
        cost = estimate_cost(model, next_request)
        tokens = tokens_of(next_request)
        day = self.day.read() if self.day is not None and self._counts_days() else Spent()
        b = self.budgets
        checks: list[tuple[str, float | int | None, float | None, str]] = [
            ("cellUsd", b.cell_usd, _plus(self.cell.usd, cost), "this cell"),
            ("sessionUsd", b.session_usd, _plus(self.session.usd, cost), "this session"),
            ("dayUsd", b.day_usd, _plus(day.usd, cost), "today"),
            ("cellTokens", b.cell_tokens, self.cell.tokens + tokens, "this cell"),
            ("sessionTokens", b.session_tokens, self.session.tokens + tokens, "this session"),
            ("dayTokens", b.day_tokens, day.tokens + tokens, "today"),
        ]
        for name, cap, projected, scope in checks:
            if cap is None:
                continue
            if projected is None:  # a model with no list price: dollars cannot be counted
                return (
                    f"The {name} budget is in dollars, and {model!r} has no list price here, "
                    f"so what it costs cannot be counted; no request was sent. Use a model "
                    f"with a list price, or a budget in tokens ({_where(self.sources, name)})."
                )
            if projected > cap:
                spent = _spent(name, self, day)
                return (
                    f"Budget reached: {name} {_amount(name, cap)} for {scope} "
                    f"({_amount(name, spent)} spent; the next request would pass it). No "
                    f"request was sent and nothing done in the cell was lost. "
                    f"{_where(self.sources, name)}"
                )
        return None


def _plus(spent: float | None, cost: float | None) -> float | None:
    return None if spent is None or cost is None else spent + cost


def _spent(name: str, guard: BudgetGuard, day: Spent) -> float:
    spent = {"cell": guard.cell, "session": guard.session, "day": day}[
        name.removesuffix("Usd").removesuffix("Tokens")
    ]
    value = spent.usd if name.endswith("Usd") else spent.tokens
    return value or 0.0


def _amount(name: str, value: float) -> str:
    return f"${value:,.2f}" if name.endswith("Usd") else f"{int(value):,} tokens"


def _where(sources: dict[str, str], name: str) -> str:
    source = sources.get(name)
    if source is None:
        return f'Raise it under "budgets" → "{name}" in your settings.'
    if source.startswith("policy:"):
        return (
            f"It is set by the policy in {source.removeprefix('policy:')}: ask whoever runs "
            "this server to raise it."
        )
    return f'Raise it under "budgets" → "{name}" in {source}.'
