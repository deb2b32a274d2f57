"""`%agent history --timeline`: the session's tool calls on one time axis, as SVG.

Drawn from the cards the live view recorded (`CallCard`: start and end, batch, status, why
a cancelled call was stopped, the times it waited for a person):

- the calls of a batch are grouped under a batch label, one row each, so concurrent calls
  stand side by side in time and an unsafe call visibly runs alone; bars are coloured by
  batch; a time axis with ticks in seconds runs under them;
- the time a call waited for a person (an approval prompt, or a question it asked, such as
  AskUserQuestion's) is hatched on its bar and named in its tooltip: a wait is never drawn
  as the call running;
- calls that did not end well carry a mark after the bar, explained in the legend: ✗
  failed, ⊘ denied, ↯ cancelled because a sibling failed, ■ interrupted, □ cancelled
  otherwise (its message was discarded);
- every element has a `<title>` (a tooltip): the call's name and input, batch, duration,
  status and waits.

The output is `image/svg+xml`, with the same SVG inline as `text/html` (an `<img>` would
hide the tooltips; JupyterLab and an nbconvert HTML export both draw inline SVG) and a plain
text list. No toolhost JSON payload: the lab renderer would take precedence over the SVG.
Text is 12 px or larger. The layout depends only on the cards' times relative to the first
start, so the same timings always give the same SVG. Timings vary from run to run, so this
display is only made on request (never as part of an agent cell's output).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, assert_never

from ...core.numbers import format_number
from .cards import CallCard, waited_label, waits_by_kind
from .render import FG2, Rendered, text_colour

TimelineStatus: TypeAlias = Literal[
    "done", "error", "denied", "sibling", "interrupted", "cancelled", "running"
]

BATCH_COLORS = ("#1a73e8", "#188038", "#e37400", "#9334e6", "#d93025", "#007b83", "#b06000")
NOT_STARTED_COLOR = "#80868b"
WAIT_COLOR = "#f9ab00"
MARKS: dict[TimelineStatus, tuple[str, str, str]] = {
    "error": ("✗", "#d93025", "failed"),
    "denied": ("⊘", "#b06000", "denied"),
    "sibling": ("↯", "#5f6368", "cancelled: a sibling call failed"),
    "interrupted": ("■", "#5f6368", "interrupted"),
    "cancelled": ("□", "#5f6368", "cancelled"),
}
"""status → (symbol, colour, what it means), for the mark after a bar and the legend."""

FONT = 12
WIDTH = 640
"""The drawing's width in CSS pixels: it fits a notebook at 1024×768 with the file browser
open; it is drawn at least that wide (the text stays 12 px, the box scrolls sideways when
narrower) and grows with a wider output area, up to `MAX_SCALE` times."""
MAX_SCALE = 1.5
LABEL_X = 8
LABEL_CHARS = 28
PLOT_X = 230
PLOT_W = 360
TOP = 30
HEADER_H = 18
ROW_H = 20
BAR_H = 13
GROUP_GAP = 6
AXIS_H = 36
LEGEND_H = 20
LEGEND_COLUMNS = 2
WAIT_PATTERN = "toolhost-timeline-wait"
TEXT = 'fill="#202124" style="fill:var(--jp-content-font-color1,#202124)"'
"""Text in JupyterLab's own colours (readable in its dark theme), else dark grey."""
TEXT2 = f'fill="#3c4043" style="fill:{FG2}"'
"""Secondary text; the marks (✗ ⊘ ↯ ■ □) are drawn in it too in JupyterLab, where their
colours would fall under 4.5:1 on the dark theme (each mark differs by its shape)."""


def timeline_status(card: CallCard) -> TimelineStatus:
    """What the timeline shows of a card's status (a cancellation says why)."""
    match card.status:
        case "cancelled":
            if card.stopped_by == "sibling":
                return "sibling"
            if card.stopped_by == "interrupt":
                return "interrupted"
            return "cancelled"
        case "queued" | "running":
            return "running"
        case "done" | "error" | "denied":
            return card.status
        case _:
            assert_never(card.status)


@dataclass(frozen=True, slots=True)
class _Axis:
    origin: float
    end: float
    """Seconds after `origin` where the axis ends (a whole number of ticks)."""
    step: float

    def x(self, moment: float) -> float:
        offset = min(max(moment - self.origin, 0.0), self.end)
        return PLOT_X + offset * PLOT_W / self.end

    def label(self, seconds: float) -> str:
        decimals = max(0, -math.floor(math.log10(self.step) + 1e-9))
        return f"{seconds:.{decimals}f} s"


def _axis(origin: float, span: float) -> _Axis:
    """Ticks at 1, 2 or 5 × 10ⁿ seconds, at most 8 of them; the axis ends on a tick."""
    raw = max(span, 1e-3) / 8
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(f * power for f in (1, 2, 5, 10) if f * power >= raw * (1 - 1e-9))
    ticks = max(1, math.ceil(max(span, 1e-3) / step - 1e-9))
    return _Axis(origin, ticks * step, step)


def _groups(cards: Sequence[CallCard]) -> list[tuple[int, list[CallCard]]]:
    """Calls grouped by batch, groups in time order, calls in the order the model sent
    them; batches numbered 1, 2, ... along the timeline, -1 for calls that never started.

    A batch is (model response, batch of that response): each response numbers its batches
    from 1 (and each cell its responses), so the number alone can repeat in one cell.
    """
    grouped: dict[tuple[int, int], list[CallCard]] = {}
    for card in cards:
        grouped.setdefault((card.response, card.batch if card.batch > 0 else -1), []).append(card)

    def first_start(item: tuple[tuple[int, int], list[CallCard]]) -> tuple[float, int, int]:
        (response, batch), members = item
        return (min(c.started or 0.0 for c in members), batch < 0, response)

    numbered: list[tuple[int, list[CallCard]]] = []
    for (_response, batch), members in sorted(grouped.items(), key=first_start):
        numbered.append((sum(n > 0 for n, _ in numbered) + 1 if batch > 0 else -1, members))
    return numbered


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _title(text: str) -> str:
    return f"<title>{_esc(text)}</title>"


def _color(batch: int) -> str:
    return BATCH_COLORS[(batch - 1) % len(BATCH_COLORS)] if batch > 0 else NOT_STARTED_COLOR


def _short(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _status_text(card: CallCard) -> str:
    status = timeline_status(card)
    mark = MARKS.get(status)
    return mark[2] if mark is not None else status


def call_tooltip(card: CallCard, *, batch: int, axis_origin: float | None = None) -> str:
    """The tooltip of a call: name and input, batch (as the timeline numbers it), duration,
    status, waits for a person."""
    group = f"Batch {batch}" if batch > 0 else "not started"
    duration = format_number(card.duration or 0.0, "seconds")
    lines = [
        f"{card.name}: {card.summary}" if card.summary else card.name,
        f"{group} · {duration} · {_status_text(card)}",
    ]
    for what, seconds in waits_by_kind(card).items():
        count = sum(wait.what == what for wait in card.waits)
        prompts = "" if count == 1 else f" ({count} prompts)"
        lines.append(waited_label(seconds, what) + prompts)
    if axis_origin is not None and card.started is not None:
        lines.append(f"started at {format_number(card.started - axis_origin, 'seconds')}")
    return "\n".join(lines)


def _header(batch: int, cards: list[CallCard], y: float) -> str:
    count = f"{len(cards)} call" + ("" if len(cards) == 1 else "s")
    if batch > 0:
        starts = [c.started for c in cards if c.started is not None]
        ends = [c.ended for c in cards if c.ended is not None]
        wall = format_number(max(ends) - min(starts), "seconds") if starts and ends else ""
        together = "ran concurrently" if len(cards) > 1 else "ran alone"
        text = f"Batch {batch} · {count} {together} · {wall}"
    else:
        text = f"not started · {count} answered without running"
    return (
        f'<g class="toolhost-batch" data-batch="{batch}">{_title(text)}'
        f'<text x="{LABEL_X}" y="{y + 13:.1f}" font-weight="bold" '
        f"{TEXT}>"
        f"{_esc(text)}</text></g>"
    )


def _row(card: CallCard, batch: int, axis: _Axis, y: float) -> str:
    status = timeline_status(card)
    tooltip = call_tooltip(card, batch=batch, axis_origin=axis.origin)
    label = _short(f"{card.name}: {card.summary}" if card.summary else card.name, LABEL_CHARS)
    assert card.started is not None and card.ended is not None
    x0, x1 = axis.x(card.started), axis.x(card.ended)
    width = max(x1 - x0, 2.0)
    bar_y = y + (ROW_H - BAR_H) / 2
    color = _color(batch)
    if status == "done":
        style = f'fill="{color}"'
    else:
        edge = MARKS[status][1] if status in MARKS else color
        dashed = ' stroke-dasharray="3 2"' if status in ("sibling", "interrupted") else ""
        style = f'fill="{color}" fill-opacity="0.35" stroke="{edge}" stroke-width="1.5"{dashed}'
    parts = [
        f'<g class="toolhost-call" data-status="{status}" data-batch="{batch}">',
        _title(tooltip),
        f'<text x="{LABEL_X + 10}" y="{y + 14:.1f}" {TEXT}>{_title(tooltip)}{_esc(label)}</text>',
        f'<rect class="toolhost-bar" x="{x0:.1f}" y="{bar_y:.1f}" width="{width:.1f}" '
        f'height="{BAR_H}" rx="2" {style}>{_title(tooltip)}</rect>',
    ]
    for asked, answered, what in card.waits:
        w0, w1 = axis.x(asked), axis.x(answered)
        wait = (
            f"{card.name}: {waited_label(answered - asked, what)} "
            f"(asked at {format_number(asked - axis.origin, 'seconds')})"
        )
        parts.append(
            f'<rect class="toolhost-wait" data-what="{_esc(what)}" x="{w0:.1f}" y="{bar_y:.1f}" '
            f'width="{max(w1 - w0, 1.0):.1f}" height="{BAR_H}" '
            f'fill="url(#{WAIT_PATTERN}) {WAIT_COLOR}" stroke="{WAIT_COLOR}">'
            f"{_title(wait)}</rect>"
        )
    mark = MARKS.get(status)
    if mark is not None:
        symbol, mark_color, meaning = mark
        parts.append(
            f'<text class="toolhost-mark" data-status="{status}" x="{x0 + width + 4:.1f}" '
            f'y="{y + 14:.1f}" font-size="13" fill="{mark_color}" '
            f'style="fill:{text_colour("--jp-content-font-color2", mark_color, 80)}">'
            f"{_title(f'{meaning} — {card.name}: {card.summary}')}{symbol}</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def _axis_svg(axis: _Axis, top: float, bottom: float) -> str:
    ticks = round(axis.end / axis.step)
    parts = [
        '<g class="toolhost-axis">',
        _title("time since the first call started, in seconds"),
        f'<line x1="{PLOT_X}" y1="{bottom:.1f}" x2="{PLOT_X + PLOT_W}" y2="{bottom:.1f}" '
        'stroke="#5f6368" style="stroke:var(--jp-content-font-color2,#5f6368)"/>',
    ]
    for index in range(ticks + 1):
        seconds = index * axis.step
        x = axis.x(axis.origin + seconds)
        label = axis.label(seconds)
        parts.append(
            f'<g class="toolhost-tick">{_title(f"{label} after the first call started")}'
            f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
            'stroke="#dadce0" stroke-width="1" style="stroke:var(--jp-border-color2,#dadce0)"/>'
            f'<line x1="{x:.1f}" y1="{bottom:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}" '
            'stroke="#5f6368" style="stroke:var(--jp-content-font-color2,#5f6368)"/>'
            f'<text x="{x:.1f}" y="{bottom + 17:.1f}" text-anchor="middle" {TEXT2}>'
            f"{_esc(label)}</text></g>"
        )
    parts.append("</g>")
    return "".join(parts)


def _legend(y: float) -> tuple[str, float]:
    """The legend from `y` down, in three columns, and where it ends."""
    items: list[tuple[str, str, str]] = [
        ("wait", WAIT_COLOR, "waiting for you (approval, answer)"),
        *MARKS.values(),
    ]
    column = (WIDTH - 2 * LABEL_X) / LEGEND_COLUMNS
    parts = ['<g class="toolhost-legend">', _title("bar colour = batch; what the marks mean")]
    for index, (symbol, color, meaning) in enumerate(items):
        x = LABEL_X + (index % LEGEND_COLUMNS) * column
        row_y = y + (index // LEGEND_COLUMNS) * LEGEND_H
        if symbol == "wait":
            swatch = (
                f'<rect x="{x:.1f}" y="{row_y + 3:.1f}" width="16" height="11" '
                f'fill="url(#{WAIT_PATTERN}) {WAIT_COLOR}" stroke="{WAIT_COLOR}"/>'
            )
        else:
            swatch = (
                f'<text x="{x + 2:.1f}" y="{row_y + 13:.1f}" font-size="13" fill="{color}" '
                f'style="fill:{text_colour("--jp-content-font-color2", color, 80)}">'
                f"{symbol}</text>"
            )
        parts.append(
            f'<g class="toolhost-legend-item">{_title(meaning)}{swatch}'
            f'<text x="{x + 22:.1f}" y="{row_y + 13:.1f}" {TEXT2}>{_esc(meaning)}</text>'
            "</g>"
        )
    parts.append("</g>")
    rows = math.ceil(len(items) / LEGEND_COLUMNS)
    return "".join(parts), y + rows * LEGEND_H


def timeline_svg(cards: Sequence[CallCard]) -> str:
    """An SVG image of the calls that have both a start and an end time."""
    timed = [c for c in cards if c.started is not None and c.ended is not None]
    if not timed:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="300" height="30" '
            f'viewBox="0 0 300 30" font-family="sans-serif" font-size="{FONT}">'
            f"{_title('no tool calls yet')}"
            '<text x="4" y="20">no tool calls yet</text></svg>'
        )
    origin = min(c.started for c in timed if c.started is not None)
    span = max(c.ended for c in timed if c.ended is not None) - origin
    axis = _axis(origin, span)
    groups = _groups(timed)
    body: list[str] = []
    y = float(TOP)
    for batch, members in groups:
        body.append(_header(batch, members, y))
        y += HEADER_H
        for card in members:
            body.append(_row(card, batch, axis, y))
            y += ROW_H
        y += GROUP_GAP
    plot_bottom = y
    legend, legend_bottom = _legend(plot_bottom + AXIS_H)
    height = math.ceil(legend_bottom + 6)
    calls = f"{len(timed)} tool call" + ("" if len(timed) == 1 else "s")
    heading = f"{calls} in {len(groups)} group" + ("" if len(groups) == 1 else "s")
    heading += f" over {format_number(span, 'seconds')} (bar colour = batch)"
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="toolhost-timeline" '
            f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
            f'style="width:100%;min-width:{WIDTH}px;max-width:{WIDTH * MAX_SCALE:.0f}px;'
            'height:auto" '
            f'font-family="sans-serif" font-size="{FONT}">',
            _title(heading),
            f'<defs><pattern id="{WAIT_PATTERN}" width="6" height="6" '
            'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            f'<rect width="6" height="6" fill="#fef7e0"/>'
            f'<rect width="3" height="6" fill="{WAIT_COLOR}"/></pattern></defs>',
            f'<rect class="toolhost-background" width="{WIDTH}" height="{height}" '
            'fill="#fff" style="fill:var(--jp-layout-color0,#fff)">'
            f"{_title(heading)}</rect>",
            f'<text x="{LABEL_X}" y="18" font-size="13" {TEXT}>{_title(heading)}'
            f"{_esc(heading)}</text>",
            _axis_svg(axis, TOP, plot_bottom),
            *body,
            legend,
            "</svg>",
        ]
    )


def timeline_plain(cards: Sequence[CallCard]) -> str:
    """The timeline as text: one line per finished call, grouped as in the SVG."""
    timed = [c for c in cards if c.started is not None and c.ended is not None]
    lines = []
    for batch, members in _groups(timed):
        lines.append(f"Batch {batch}" if batch > 0 else "not started")
        for card in members:
            line = (
                f"  {card.name}: {_short(card.summary, 60)}  "
                f"{format_number(card.duration or 0.0, 'seconds')}  {_status_text(card)}"
            )
            for what, seconds in waits_by_kind(card).items():
                line += f"  ({waited_label(seconds, what)})"
            lines.append(line)
    return "\n".join(lines) or "no tool calls yet"


def timeline_display(cards: Sequence[CallCard]) -> Rendered:
    """The timeline as an `image/svg+xml` output (the same SVG inline as HTML, and text)."""
    svg = timeline_svg(cards)
    return Rendered(
        {
            "image/svg+xml": svg,
            "text/html": f'<div class="toolhost-timeline" style="overflow-x:auto">{svg}</div>',
            "text/plain": timeline_plain(cards),
        }
    )
