"""When a scheduled prompt fires: 5-field cron expressions and `@every <interval>`.

Cron fields are minute, hour, day of month, month, day of week (0 or 7 = Sunday), each
`*`, a number, a range `a-b`, a list `a,b`, with an optional step `/n`; names of months
and days are not supported. As in cron, when both day fields are restricted a day matches
either. Times are the kernel's local time. `@hourly`, `@daily`, `@weekly`, `@monthly` are
shorthands; `@every 90s` / `@every 5m` / `@every 1h30m` is a plain interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ...core.errors import ParseError

_ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_INTERVAL_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_SEARCH_DAYS = 366 * 5


class ScheduleError(ParseError):
    """An expression that cannot be scheduled; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed expression: either an interval in seconds or the sets of a cron line."""

    expression: str
    interval: float | None = None
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    days_restricted: bool = False
    weekdays_restricted: bool = False

    def next_after(self, moment: datetime) -> datetime:
        """The first firing time strictly after `moment`."""
        if self.interval is not None:
            return moment + timedelta(seconds=self.interval)
        candidate = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = moment + timedelta(days=MAX_SEARCH_DAYS)
        while candidate <= limit:
            if candidate.month not in self.months:
                candidate = _next_month(candidate)
            elif not self._day_matches(candidate):
                candidate = (candidate + timedelta(days=1)).replace(hour=0, minute=0)
            elif candidate.hour not in self.hours:
                candidate = (candidate + timedelta(hours=1)).replace(minute=0)
            elif candidate.minute not in self.minutes:
                candidate += timedelta(minutes=1)
            else:
                return candidate
        raise ScheduleError(f"{self.expression!r} never fires")

    def _day_matches(self, moment: datetime) -> bool:
        day = moment.day in self.days
        weekday = (moment.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day or weekday
        return day and weekday

    def describe(self) -> str:
        if self.interval is not None:
            return f"every {self.interval:g} s"
        return f"cron '{self.expression}' (local time)"


def parse_schedule(expression: str, *, min_interval: float = 1.0) -> Schedule:
    """Parse a cron line or `@every <interval>`; raises `ScheduleError`."""
    text = " ".join(expression.split())
    if text.startswith("@every"):
        return Schedule(text, interval=_interval(text[len("@every") :].strip(), min_interval))
    line = _ALIASES.get(text, text)
    parts = line.split(" ")
    if len(parts) != 5:
        raise ScheduleError(
            f"{expression!r}: a cron expression has 5 fields (minute hour day month weekday), "
            "or use @every <interval> such as '@every 10m'"
        )
    sets = [_field(p, b, n) for p, b, n in zip(parts, _BOUNDS, _FIELD_NAMES, strict=True)]
    weekdays = frozenset(0 if d == 7 else d for d in sets[4])
    return Schedule(
        text,
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )


def _interval(text: str, min_interval: float) -> float:
    compact = text.replace(" ", "")
    matches = list(_INTERVAL_PART.finditer(compact))
    if not compact or "".join(m.group(0) for m in matches) != compact:
        raise ScheduleError(f"{text!r} is not an interval; write e.g. 30s, 5m, 1h30m")
    seconds = sum(float(m.group(1)) * _UNITS[m.group(2)] for m in matches)
    if seconds < min_interval:
        raise ScheduleError(f"the interval must be at least {min_interval:g} s")
    return seconds


def _field(text: str, bounds: tuple[int, int], name: str) -> frozenset[int]:
    low, high = bounds
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = low, high
            elif "-" in base:
                first, _, last = base.partition("-")
                start, end = int(first), int(last)
            else:
                start = int(base)
                end = high if step_text else start
        except ValueError:
            raise ScheduleError(f"bad {name} field {text!r}") from None
        if step < 1 or not low <= start <= end <= high:
            raise ScheduleError(f"{name} field {text!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _next_month(moment: datetime) -> datetime:
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return moment.replace(year=year, month=month, day=1, hour=0, minute=0)
