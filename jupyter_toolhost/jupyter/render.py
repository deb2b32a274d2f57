"""Mimebundles for everything the agent shows in a cell: tool cards, batches, footers, tables.

Every display carries three representations:

- ``application/vnd.jupyter.toolhost.v1+json``: the full data (ids, timings, tokens, cost)
  for the JupyterLab renderer;
- ``text/html``: works in Notebook 7, VS Code, nbviewer and GitHub;
- ``text/plain``: deterministic.

nbval compares ``text/plain``, ``text/html`` and streams, so the HTML and plain text hold
nothing that changes between two runs of the same cassette: no tool_use ids, durations,
token counts or costs. Those live only in the JSON payload (and in ``%agent cost``,
``%agent history --timeline``). Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

MIME_TYPE = "application/vnd.jupyter.toolhost.v1+json"
PREVIEW_CHARS = 2_000
"""How much of a result a card shows (the rest stays in the JSON payload and on disk)."""

CallStatus: TypeAlias = Literal["queued", "running", "done", "error", "denied", "cancelled"]

_STATUS_MARK: dict[CallStatus, str] = {
    "queued": "…",
    "running": "▶",
    "done": "✓",
    "error": "✗",
    "denied": "⊘",
    "cancelled": "■",
}
_STATUS_COLOR: dict[CallStatus, str] = {
    "queued": "#888",
    "running": "#1a73e8",
    "done": "#188038",
    "error": "#d93025",
    "denied": "#b06000",
    "cancelled": "#888",
}
_BOX = (
    "border:1px solid #ddd;border-radius:4px;padding:4px 8px;margin:2px 0;"
    "font-family:var(--jp-code-font-family,monospace);font-size:12px"
)


@dataclass(slots=True)
class CallCard:
    """What one tool call looks like in the cell; final once the call has ended."""

    tool_use_id: str
    name: str
    summary: str
    batch: int
    status: CallStatus = "queued"
    started: float | None = None
    ended: float | None = None
    result: str = ""
    persisted_path: str | None = None
    original_size: int | None = None
    progress: str | None = None

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    @property
    def final(self) -> bool:
        return self.status not in ("queued", "running")


class Rendered:
    """A ready mimebundle that IPython's `display()` shows as is."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return self.data

    def __repr__(self) -> str:
        return str(self.data.get("text/plain", ""))


def bundle(kind: str, payload: Mapping[str, Any], *, html_text: str, plain: str) -> Rendered:
    """One display: the JSON payload (tagged with its kind) beside HTML and plain text."""
    data = {"version": 1, "kind": kind, **payload}
    return Rendered({MIME_TYPE: _jsonable(data), "text/html": html_text, "text/plain": plain})


def _jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _short(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


# ── tool cards ───────────────────────────────────────────────────────────────────────────


def card_plain(card: CallCard) -> str:
    """One deterministic line: status mark, name, summary."""
    summary = _short(card.summary, 100)
    return f"{_STATUS_MARK[card.status]} {card.name}" + (f": {summary}" if summary else "")


def card_html(card: CallCard, *, live: bool = False) -> str:
    """A card: name, input summary, status, result preview (duration only when `live`)."""
    color = _STATUS_COLOR[card.status]
    head = (
        f'<span style="color:{color}">{_STATUS_MARK[card.status]}</span> '
        f"<b>{_esc(card.name)}</b> <code>{_esc(_short(card.summary, 100))}</code> "
        f'<span style="color:{color}">{card.status}</span>'
    )
    if live and card.progress:
        head += f' <i style="color:#888">{_esc(_short(card.progress, 80))}</i>'
    return f'<div style="{_BOX}">{head}{_result_html(card)}</div>'


def _result_html(card: CallCard) -> str:
    if not card.final or not card.result:
        return ""
    if card.persisted_path is not None:
        size = card.original_size if card.original_size is not None else len(card.result)
        return (
            f"<details><summary>output: {size:,} characters, saved to "
            f"<code>{_esc(card.persisted_path)}</code></summary>"
            f"<pre>{_esc(_preview_of_persisted(card.result))}</pre></details>"
        )
    text, cut = _clip(card.result)
    if "\n" not in text and not cut and len(text) <= 100:
        return f'<div style="color:#555">{_esc(text)}</div>'
    label = f"output ({len(card.result):,} characters)"
    return (
        f"<details><summary>{label}</summary><pre>{_esc(text)}{'…' if cut else ''}</pre></details>"
    )


def _preview_of_persisted(result: str) -> str:
    """The preview part of a `<persisted-output>` block (or the text itself)."""
    marker = "Preview (first"
    start = result.find(marker)
    if start < 0:
        return _clip(result)[0]
    body = result[result.find("\n", start) + 1 :]
    return body.removesuffix("</persisted-output>").rstrip("\n")


def _clip(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= PREVIEW_CHARS else (text[:PREVIEW_CHARS], True)


def card_json(card: CallCard) -> dict[str, Any]:
    data = asdict(card)
    data["duration"] = card.duration
    data["result"] = _clip(card.result)[0]
    return data


def batch_display(cards: Sequence[CallCard], *, batch: int) -> Rendered:
    """The final cards of one batch, grouped; calls in the order the model sent them."""
    concurrent = len(cards) > 1
    title = f"batch {batch}: {len(cards)} calls run concurrently" if concurrent else ""
    inner = "".join(card_html(card) for card in cards)
    if concurrent:
        inner_html = (
            '<div style="border-left:3px solid #1a73e8;padding-left:6px;margin:4px 0">'
            f'<div style="color:#1a73e8;font-size:11px">{_esc(title)}</div>{inner}</div>'
        )
    else:
        inner_html = inner
    lines = [card_plain(card) for card in cards]
    plain = (
        "\n".join([f"┌ {title}", *(f"│ {line}" for line in lines), "└"])
        if concurrent
        else ("\n".join(lines))
    )
    payload = {"batch": batch, "calls": [card_json(card) for card in cards]}
    return bundle("batch", payload, html_text=inner_html, plain=plain)


def live_display(cards: Iterable[CallCard], *, status: str = "") -> Rendered:
    """The live panel: cards still running, with durations and progress (transient)."""
    shown = list(cards)
    inner = "".join(card_html(card, live=True) for card in shown)
    if status:
        inner = f'<div style="color:#888;font-size:11px">{_esc(status)}</div>' + inner
    plain = "\n".join([status, *(card_plain(card) for card in shown)]).strip()
    return bundle("live", {"calls": [card_json(c) for c in shown]}, html_text=inner, plain=plain)


EMPTY_LIVE = live_display(())
"""What the live panel starts and ends as, so every run leaves the same output behind."""


# ── footer, notices, tables ──────────────────────────────────────────────────────────────


@dataclass(slots=True)
class TurnSummary:
    """What one `%%agent` cell did; the numbers stay in the JSON payload only."""

    model_requests: int = 0
    tool_calls: int = 0
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    duration: float | None = None


def footer_display(summary: TurnSummary) -> Rendered:
    """The per-cell footer: deterministic counts shown; tokens, cost and time in JSON only."""
    calls = f"{summary.tool_calls} tool call" + ("" if summary.tool_calls == 1 else "s")
    stop = f" · stop: {summary.stop_reason}" if summary.stop_reason else ""
    plain = f"── {calls}{stop} ── (%agent cost for tokens and cost)"
    html_text = (
        f'<div style="color:#888;font-size:11px;border-top:1px solid #eee;margin-top:4px">'
        f"{_esc(calls)}{_esc(stop)} · <code>%agent cost</code> for tokens and cost</div>"
    )
    return bundle("footer", asdict(summary), html_text=html_text, plain=plain)


def notice_display(text: str, *, level: Literal["info", "warning", "error"] = "info") -> Rendered:
    """A one-line message (errors, interrupts, usage hints)."""
    color = {"info": "#555", "warning": "#b06000", "error": "#d93025"}[level]
    return bundle(
        "notice",
        {"level": level, "text": text},
        html_text=f'<div style="color:{color}"><pre style="margin:0">{_esc(text)}</pre></div>',
        plain=text,
    )


def table_display(
    kind: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str = ""
) -> Rendered:
    """A small table (tools, rules, history) as HTML and aligned plain text."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [
        max([len(column), *(len(row[i]) for row in cells)]) for i, column in enumerate(columns)
    ]
    header = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()
    body = [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    plain = "\n".join([*([title] if title else []), header, *body])
    head_html = "".join(f"<th style='text-align:left'>{_esc(c)}</th>" for c in columns)
    rows_html = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{_esc(v)}</td>" for v in row) + "</tr>"
        for row in cells
    )
    caption = f"<caption style='text-align:left'>{_esc(title)}</caption>" if title else ""
    html_text = (
        f"<table>{caption}<thead><tr>{head_html}</tr></thead><tbody>{rows_html}</tbody></table>"
    )
    payload = {"title": title, "columns": list(columns), "rows": [list(r) for r in cells]}
    return bundle(kind, payload, html_text=html_text, plain=plain)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)
