"""`%agent history --timeline`: the session's tool calls on a time axis, as SVG.

One row per call, bars from start to end, coloured by batch, so the calls of a concurrent
batch stand side by side and an unsafe call visibly runs alone. Timings vary from run to
run, so this display is only made on request (never as part of an agent cell's output).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .cards import CallCard
from .render import Rendered, bundle

_COLORS = ("#1a73e8", "#188038", "#e37400", "#9334e6", "#d93025", "#007b83", "#b06000")
_ROW = 18
_LABEL = 220
_PLOT = 520
_TOP = 24


def timeline_svg(cards: Sequence[CallCard]) -> str:
    """An SVG image of the calls that have both a start and an end time."""
    timed = [c for c in cards if c.started is not None and c.ended is not None]
    if not timed:
        return (
            "<svg xmlns='http://www.w3.org/2000/svg' width='300' height='30'>"
            "<text x='4' y='20' font-size='12'>no tool calls yet</text></svg>"
        )
    origin = min(c.started for c in timed if c.started is not None)
    end = max(c.ended for c in timed if c.ended is not None)
    span = max(end - origin, 1e-3)
    scale = _PLOT / span
    height = _TOP + _ROW * len(timed) + 24
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{_LABEL + _PLOT + 60}' height='{height}' "
        "font-family='monospace' font-size='11'>",
        f"<text x='4' y='14' font-size='12'>tool calls over {span:.2f} s (colour = batch)</text>",
    ]
    for row, card in enumerate(timed):
        assert card.started is not None and card.ended is not None
        y = _TOP + row * _ROW
        x = _LABEL + (card.started - origin) * scale
        width = max((card.ended - card.started) * scale, 1.5)
        color = _COLORS[card.batch % len(_COLORS)]
        label = html.escape(f"#{card.batch} {card.name}: {card.summary}"[:34])
        title = html.escape(
            f"{card.name} {card.summary} — batch {card.batch}, {card.ended - card.started:.3f} s, "
            f"{card.status}"
        )
        parts.append(f"<text x='4' y='{y + 12}'>{label}</text>")
        parts.append(
            f"<rect x='{x:.1f}' y='{y + 2}' width='{width:.1f}' height='{_ROW - 5}' "
            f"fill='{color}' opacity='{0.45 if card.status != 'done' else 0.85}'>"
            f"<title>{title}</title></rect>"
        )
    axis_y = _TOP + _ROW * len(timed) + 4
    parts.append(
        f"<line x1='{_LABEL}' y1='{axis_y}' x2='{_LABEL + _PLOT}' y2='{axis_y}' stroke='#888'/>"
    )
    for tick in range(5):
        x = _LABEL + _PLOT * tick / 4
        seconds = span * tick / 4
        parts.append(
            f"<text x='{x:.1f}' y='{axis_y + 14}' text-anchor='middle'>{seconds:.2f}s</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def timeline_display(cards: Sequence[CallCard]) -> Rendered:
    """The timeline as SVG (with HTML and plain-text fallbacks)."""
    svg = timeline_svg(cards)
    rows = [
        f"batch {c.batch}  {c.name}: {c.summary}  {c.duration:.3f} s"
        for c in cards
        if c.duration is not None
    ]
    shown = bundle(
        "timeline",
        {
            "calls": [
                {"name": c.name, "batch": c.batch, "start": c.started, "end": c.ended}
                for c in cards
            ]
        },
        html_text=svg,
        plain="\n".join(rows) or "no tool calls yet",
    )
    shown.data["image/svg+xml"] = svg
    return shown
