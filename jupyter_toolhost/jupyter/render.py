"""Mimebundles for everything the agent shows in a cell: tool cards, batches, footers, tables.

Every display carries three representations:

- ``application/vnd.jupyter.toolhost.v1+json``: the full data (ids, timings, tokens, cost)
  for the JupyterLab renderer;
- ``text/html``: works in Notebook 7, VS Code, nbviewer and GitHub;
- ``text/plain``: deterministic.

nbval compares every MIME type it does not skip, JSON payloads included, unsanitized; the
notebooks' ``conftest.py`` tells it to skip this JSON payload (it holds timings). So the HTML
and plain text are what is compared, and they hold nothing that changes between two runs of
the same cassette: no durations, token counts,
costs, session ids or absolute paths (a persisted result shows as
``tool-results/<file>``, named after its tool_use id, which a cassette fixes), and of a
permission decision only a rule or a mode. The rest lives only in the JSON payload (and in
``%agent cost``, ``%agent history --timeline``). Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any, Literal, TypeAlias

from ..types import PermissionResult

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
    decision: dict[str, Any] | None = None
    """Why the call was allowed or denied (`decision_json`), when known."""
    language: str | None = None
    """The language of the result's text (from a read file's extension), when known."""

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

_LANGUAGES = {
    "py": "python",
    "pyi": "python",
    "js": "javascript",
    "mjs": "javascript",
    "ts": "typescript",
    "tsx": "typescript",
    "json": "json",
    "md": "markdown",
    "html": "html",
    "css": "css",
    "sh": "shell",
    "bash": "shell",
    "yml": "yaml",
    "yaml": "yaml",
    "toml": "toml",
    "rs": "rust",
    "go": "go",
    "java": "java",
    "c": "c",
    "h": "c",
    "cpp": "cpp",
    "sql": "sql",
    "xml": "xml",
    "r": "r",
    "jl": "julia",
}
_SHOWN_REASONS = ("rule", "mode")
"""Decision reasons shown in text and HTML: these are the same on every run (a hook's
message or an approver's answer may not be; those stay in the JSON payload)."""


def language_of_path(path: str) -> str | None:
    """The language of a file by its extension (`data.py` → python), or None."""
    suffix = PurePath(path).suffix.lower().removeprefix(".")
    return _LANGUAGES.get(suffix)


def decision_json(decision: PermissionResult | None) -> dict[str, Any] | None:
    """A permission decision for the payload: behavior, reason, kind, source."""
    if decision is None:
        return None
    reason = decision.reason
    return {
        "behavior": decision.behavior,
        "reason": reason.detail if reason else "",
        "kind": reason.kind if reason else None,
        "source": reason.source if reason else None,
    }


def decision_text(card: CallCard) -> str:
    """The deterministic "why" of a card (a rule or a mode), else ''."""
    decision = card.decision
    if not decision or decision.get("kind") not in _SHOWN_REASONS or not decision.get("reason"):
        return ""
    reason = str(decision["reason"])
    return reason if decision["kind"] == "rule" else f"mode {reason}"


_PERSISTED_BLOCK = re.compile(
    r"<persisted-output>\nOutput too large \(([^)\n]*)\)\. Full output saved to: ([^\n]+)\n"
)


@dataclass(frozen=True, slots=True)
class PersistedOutput:
    """Where a big result was saved: the full path (JSON only) and what text may show."""

    path: str
    size: str
    """`90,000 characters`, or the size a `<persisted-output>` block states (`106.3KB`)."""

    @property
    def shown_path(self) -> str:
        """The path without the random session part: `tool-results/<tool_use_id>.txt`."""
        path = PurePath(self.path)
        return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def persisted_output(card: CallCard) -> PersistedOutput | None:
    """The card's persisted output: from the pipeline's fields, or read from the
    `<persisted-output>` block of a tool that saved its own output (Bash)."""
    found = _PERSISTED_BLOCK.search(card.result)
    path = card.persisted_path or (found.group(2).strip() if found else None)
    if path is None:
        return None
    if card.original_size is not None:
        size = f"{card.original_size:,} characters"
    elif found:
        size = found.group(1)
    else:
        size = f"{len(card.result):,} characters"
    return PersistedOutput(path, size)


def card_plain(card: CallCard) -> str:
    """Deterministic text: status mark, name, summary, why; where big output was saved."""
    summary = _short(card.summary, 100)
    line = f"{_STATUS_MARK[card.status]} {card.name}" + (f": {summary}" if summary else "")
    why = decision_text(card)
    if why:
        line += f" ({why})"
    persisted = persisted_output(card) if card.final else None
    if persisted is not None:
        line += f"\n  output: {persisted.size}, saved to {persisted.shown_path}"
    return line


def card_html(card: CallCard, *, live: bool = False) -> str:
    """A card: name, input summary, status, why, result preview (progress only when `live`)."""
    color = _STATUS_COLOR[card.status]
    head = (
        f'<span style="color:{color}">{_STATUS_MARK[card.status]}</span> '
        f"<b>{_esc(card.name)}</b> <code>{_esc(_short(card.summary, 100))}</code> "
        f'<span style="color:{color}">{card.status}</span>'
    )
    why = decision_text(card)
    if why:
        head += f' <span style="color:#888">({_esc(why)})</span>'
    if live and card.progress:
        head += f' <i style="color:#888">{_esc(_short(card.progress, 80))}</i>'
    return f'<div style="{_BOX}">{head}{_result_html(card)}</div>'


def _result_html(card: CallCard) -> str:
    if not card.final or not card.result:
        return ""
    persisted = persisted_output(card)
    if persisted is not None:
        return (
            f"<details><summary>output: {_esc(persisted.size)}, saved to "
            f"<code>{_esc(persisted.shown_path)}</code></summary>"
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
    """The preview inside the first `<persisted-output>` block, and any text after it
    (without the block's header and its absolute path); else the clipped text."""
    start = result.find("Preview (first")
    if start < 0:
        return _clip(result)[0]
    body = result[result.find("\n", start) + 1 :]
    preview, _, rest = body.partition("</persisted-output>")
    rest = _PERSISTED_BLOCK.sub("<persisted-output>\n", rest).strip("\n")
    return _clip(preview.rstrip("\n") + (f"\n{rest}" if rest else ""))[0]


def _clip(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= PREVIEW_CHARS else (text[:PREVIEW_CHARS], True)


def card_json(card: CallCard) -> dict[str, Any]:
    """A card for the payload: everything, the result clipped, the full persisted path."""
    data = asdict(card)
    data["duration"] = card.duration
    data["result"] = _clip(card.result)[0]
    persisted = persisted_output(card) if card.final else None
    if persisted is not None:
        data["persisted_path"] = persisted.path
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
    lines = [line for card in cards for line in card_plain(card).split("\n")]
    plain = (
        "\n".join([f"┌ {title}", *(f"│ {line}" for line in lines), "└"])
        if concurrent
        else ("\n".join(lines))
    )
    payload = {"batch": batch, "calls": [card_json(card) for card in cards]}
    return bundle("batch", payload, html_text=inner_html, plain=plain)


def live_display(
    cards: Iterable[CallCard], *, status: str = "", elapsed: float | None = None
) -> Rendered:
    """The live panel: cards still running, with progress (transient; nbval keeps only the
    first, empty, display). `elapsed` (seconds) goes to the JSON payload."""
    shown = list(cards)
    inner = "".join(card_html(card, live=True) for card in shown)
    if status:
        inner = f'<div style="color:#888;font-size:11px">{_esc(status)}</div>' + inner
    plain = "\n".join([status, *(card_plain(card) for card in shown)]).strip()
    payload = {
        "calls": [card_json(c) for c in shown],
        "status": "running" if shown else "idle",
        "elapsed": elapsed,
    }
    return bundle("live", payload, html_text=inner, plain=plain)


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
