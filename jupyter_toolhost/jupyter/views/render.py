"""Mimebundles for everything the agent shows in a cell (tool cards are in `cards`).

Every display carries three representations:

- ``application/vnd.jupyter.toolhost.v1+json``: the full data (ids, timings, tokens, cost,
  sub-agent calls, checklists, code) for the JupyterLab renderer;
- ``text/html``: the same story for every other front end (Notebook 7 without the
  extension, VS Code, nbviewer, an nbconvert export): status, duration, the reason a call was
  allowed or denied, batch grouping, the code that ran, checklists, nested sub-agent calls,
  a height-capped preview and a link to a saved result, relative to the notebook;
- ``text/plain``: deterministic.

What changes between two runs of the same cassette stays out of the text, and in the HTML it
is only ever inside ``<span class="toolhost-time">`` (durations), which a comparison masks
(the package's pytest plugin does it for nbval). Paths under the working directory are shown
relative to it. With a cassette the footer reads the same when it records and when it
replays (see `footer_parts`). Of a permission decision only a rule, a mode or a tool's own
reason is shown in text. Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ...core.numbers import format_number
from ...core.text import one_line
from .safe_html import clean_bundle

MIME_TYPE = "application/vnd.jupyter.toolhost.v1+json"


def text_colour(variable: str, fallback: str, share: int = 60) -> str:
    """One of JupyterLab's colours (`variable`, `fallback` where it is not defined) made
    readable as text in any theme: `share` % of it mixed with the theme's strongest text
    colour (black in a light theme, white in a dark one).

    JupyterLab tunes its accent variables for fills, not for text: as text,
    ``--jp-warn-color0`` is 3.8:1 on the light theme's white and ``--jp-error-color0`` 3.8:1
    on the dark theme's #111; ``--jp-content-font-color2`` is 4.5:1 on white and less on
    the grey of a table's even rows. Mixed 60/40, the worst accent is 5.6:1 on either
    theme's page and panel colours (``--jp-layout-color0/1/2``) and keeps its hue. The lab
    extension's stylesheet mixes its colours the same way (``--jp-toolhost-*``).
    """
    mixed = f"var({variable},{fallback}) {share}%"
    return f"color-mix(in srgb,{mixed},var(--jp-content-font-color0,#000))"


FG1 = "var(--jp-content-font-color1,#1f1f1f)"
"""Body text: JupyterLab's own colour variables (with a fallback for pages without them), so
every view reads in the light and the dark theme alike (contrast ≥ 4.5:1 in both)."""
FG2 = text_colour("--jp-content-font-color2", "#595959", 80)
"""Secondary text (reasons, times, labels)."""
BORDER = "var(--jp-border-color2,#d0d0d0)"
ACCENT = text_colour("--jp-brand-color1", "#1a73e8")
WARN = text_colour("--jp-warn-color0", "#8a4b00")
ERROR = text_colour("--jp-error-color0", "#b3261e")
SUCCESS = text_colour("--jp-success-color0", "#137333")
MUTED = f"color:{FG2};font-size:13px"
PRE = "max-height:24em;overflow:auto;margin:2px 0;white-space:pre-wrap"
"""A preview never grows into a 10,000-pixel column: it scrolls."""
TIME_CLASS = "toolhost-time"
"""The class of HTML elements whose text varies between runs: durations."""
TOKENS_CLASS = "toolhost-tokens"
"""The class of the other HTML elements whose text varies between runs: a result's tokens."""


class Rendered:
    """A ready mimebundle that IPython's `display()` shows: every display the agent makes.

    Its markup is cleaned as it is built (`safe_html.clean_bundle`): whatever a template put
    in it, no script, event attribute, frame or form reaches the page, and no
    ``text/markdown`` (a front end keeps raw HTML in trusted Markdown).
    """

    def __init__(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None = None) -> None:
        self.data = clean_bundle(data)
        self.metadata = dict(metadata or {})

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        return (self.data, self.metadata) if self.metadata else self.data

    def __repr__(self) -> str:
        return str(self.data.get("text/plain", ""))


class KernelOutput(Rendered):
    """A display that code run by PythonExec made, shown under its card as it was made.

    Not cleaned: that code runs in the kernel's own process, which can publish any output
    to the page without us, so the permission to run it is the boundary (see `safe_html`).
    """

    def __init__(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None = None) -> None:
        self.data = dict(data)
        self.metadata = dict(metadata or {})


def bundle(kind: str, payload: Mapping[str, Any], *, html_text: str, plain: str) -> Rendered:
    """One display: the JSON payload (tagged with its kind) beside HTML and plain text."""
    data = {"version": 1, "kind": kind, **payload}
    return Rendered({MIME_TYPE: _jsonable(data), "text/html": html_text, "text/plain": plain})


def _jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def short(text: str, limit: int) -> str:
    """`text` on one line within `limit` characters, a cut marked (see `core.text`)."""
    return one_line(text, limit)


def relative_text(text: str, cwd: str) -> str:
    """`text` with every path under `cwd` written relative to it (`<cwd>/notes.md` →
    `notes.md`), so what a cell shows does not depend on where the folder lies."""
    prefixes = {os.path.abspath(cwd), os.path.realpath(cwd)}
    for prefix in sorted((p for p in prefixes if p.strip(os.sep)), key=len, reverse=True):
        text = text.replace(prefix.rstrip(os.sep) + os.sep, "")
    return text


def relative_path(path: str, cwd: str | None = None) -> str | None:
    """`path` relative to `cwd` (default: the process's working directory) when it lies
    inside it, else None."""
    base = os.path.abspath(cwd or os.getcwd())
    full = os.path.abspath(path) if os.path.isabs(path) else os.path.join(base, path)
    try:
        relative = os.path.relpath(full, base)
    except ValueError:  # another drive
        return None
    return None if relative.startswith("..") else relative.replace(os.sep, "/")


def shown_path(path: str, cwd: str | None = None) -> str:
    """How a path on the kernel's machine is shown to a person: relative to the working
    directory (the notebook's folder) when it lies inside it, else from ``~``, else only its
    folder and name. Never the machine's absolute path."""
    relative = relative_path(path, cwd)
    if relative is not None:
        return relative
    home = os.path.expanduser("~")
    if home.strip(os.sep):
        below_home = relative_path(path, home)
        if below_home is not None:
            return f"~/{below_home}"
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(part for part in parts[-2:] if part)


def home_path(path: str) -> str:
    """A folder as a person names it: from ``~`` when it lies in the home folder, else
    whole (where a folder is the question, as in "trust this folder?", it stays exact)."""
    home = os.path.expanduser("~")
    below = relative_path(path, home) if home.strip(os.sep) else None
    return path if below is None else ("~" if below == "." else f"~/{below}")


def shown_source(source: str | None) -> str | None:
    """A decision's source (a settings file, a hook command, a mode) for a person: a file's
    path is `shown_path`'s, anything else as it is."""
    return shown_path(source) if source and os.path.isabs(source) else source


def time_html(text: str) -> str:
    return f'<span class="{TIME_CLASS}" style="color:{FG2}">{esc(text)}</span>'


def tokens_html(text: str) -> str:
    """What a call's result adds to the conversation. Its figure varies by run, like a
    duration, so it has a class of its own that nbval's sanitizer masks; the title is the
    same whether the figure is estimated (≈) or measured, since a display shows the
    estimate first and is updated in place."""
    return (
        f'<span class="{TOKENS_CLASS}" style="color:{FG2}" title="{esc(TOKENS_TITLE)}">'
        f"{esc(text)}</span>"
    )


TOKENS_TITLE = (
    "tokens this result adds to every later request: measured from the usage of the request "
    "that first carried it, or (≈) estimated at about 4 characters a token and an image's "
    "width × height / 750"
)


# ── footer, notices, tables ──────────────────────────────────────────────────────────────


@dataclass(slots=True)
class TurnSummary:
    """What one `%%agent` cell did."""

    model_requests: int = 0
    tool_calls: int = 0
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    duration: float | None = None
    """Seconds the cell ran, without the time it waited for a person (`waited`)."""
    waited: float = 0.0
    """Seconds the cell waited for a person: approval prompts, questions it asked."""
    replayed: bool = False
    """The model's answers came from a cassette: nothing was paid for."""
    cassette: str | None = None
    """The kind of the cassette's answers when one is used (recording or replaying):
    "recorded" (from the API) or "scripted" (no model answered); None without one."""


def footer_parts(summary: TurnSummary) -> list[str]:
    """Calls, requests, tokens and cost, as words a reader of the page understands.

    With a cassette the text is the same whether this run records it or replays it, so a
    notebook recorded once shows byte for byte the same cell on every replay (and
    `pytest --nbval` compares equal): a recording from the API shows the usage it recorded,
    marked "as recorded — a replay spends nothing"; scripted answers show no token counts
    at all (none were real). Whether this run replayed is in the JSON payload only.
    """
    parts = [f"{summary.tool_calls} tool call" + ("" if summary.tool_calls == 1 else "s")]
    if summary.model_requests:
        requests = summary.model_requests
        parts.append(f"{requests} model request" + ("" if requests == 1 else "s"))
    usage = summary.usage
    scripted = summary.cassette == "scripted"
    if scripted:
        parts.append("scripted answers — no tokens spent")
    elif usage:
        read = usage.get("cache_read_input_tokens", 0)
        thinking = usage.get("thinking_tokens", 0)
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        tokens = f"{_tokens(tokens_in)} in / {_tokens(tokens_out)} out tokens"
        if thinking:  # part of the output tokens (and billed as output), not on top
            tokens += f" (incl. {_tokens(thinking)} thinking)"
        written = usage.get("cache_creation_input_tokens", 0)
        cached = [f"{_tokens(read)} read from cache"] if read else []
        long = usage.get("cache_creation_1h_input_tokens", 0)
        kept = f" ({_tokens(long)} for 1 h)" if long else ""
        cached += [f"{_tokens(written)} written to cache{kept}"] if written else []
        parts.append(tokens + (f" ({', '.join(cached)})" if cached else ""))
    elif summary.replayed:  # a replay that reported no usage (an old cassette)
        parts.append("replayed — no tokens spent")
    if not scripted and summary.cost_usd is not None:
        parts.append(f"≈ {format_number(summary.cost_usd, 'usd')}")
    if summary.cassette == "recorded":
        parts.append("as recorded — a replay spends nothing")
    if summary.stop_reason:
        parts.append(f"stop: {summary.stop_reason}")
    return parts


def _tokens(count: int) -> str:
    return format_number(count, "tokens")


def footer_times(summary: TurnSummary) -> list[str]:
    """The footer's times (they vary between runs: HTML time spans and the payload only): how
    long the cell ran, and apart from it how long it waited for a person."""
    times = []
    if summary.duration is not None:
        times.append(format_number(summary.duration, "seconds"))
    if summary.waited >= 0.05:
        times.append(f"waited {format_number(summary.waited, 'seconds')} for you")
    return times


def footer_display(summary: TurnSummary) -> Rendered:
    """The per-cell footer: calls, requests, tokens, cost (or "replayed — no tokens spent"); the
    duration and the time spent waiting for a person in HTML only (they vary between runs)."""
    parts = footer_parts(summary)
    times = footer_times(summary)
    plain = f"── {' · '.join(parts)} ──"
    duration = "".join(" · " + time_html(text) for text in times)
    html_text = (
        f'<div style="{MUTED};border-top:1px solid {BORDER};margin-top:4px">'
        f"{esc(' · '.join(parts))}{duration}</div>"
    )
    # The lab extension shows `parts` and `times` as they are: one formatter, one order.
    payload = {**asdict(summary), "parts": parts, "times": times}
    return bundle("footer", payload, html_text=html_text, plain=plain)


def notice_display(text: str, *, level: Literal["info", "warning", "error"] = "info") -> Rendered:
    """A one-line message (errors, interrupts, usage hints)."""
    color = {"info": FG2, "warning": WARN, "error": ERROR}[level]
    return bundle(
        "notice",
        {"level": level, "text": text},
        html_text=(
            f'<div style="color:{color}"><pre style="margin:0;white-space:pre-wrap">'
            f"{esc(text)}</pre></div>"
        ),
        plain=text,
    )


def output_display(path: str, text: str, note: str, cut: str = "") -> Rendered:
    """A page of a saved result: its path and size, the text in a box of bounded height that
    scrolls, and `cut` (what is not shown, and how to show it) under the box."""
    head = f"{path} · {note}"
    marker = f'<div class="toolhost-cut" style="{MUTED}">{esc(cut)}</div>' if cut else ""
    html_text = (
        f'<div style="{MUTED}">{esc(head)}</div>'
        f'<pre class="toolhost-output" style="{PRE}">{esc(text)}</pre>{marker}'
    )
    plain = f"{head}\n{text}" + (f"\n{cut}" if cut else "")
    return Rendered({"text/html": html_text, "text/plain": plain})


def table_display(
    kind: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    title: str = "",
    timed: Sequence[str] = (),
) -> Rendered:
    """A small table (tools, rules, history) as HTML and aligned plain text. The `timed`
    columns (durations: they vary between runs) are in the HTML only, in time spans."""
    cells = [[_cell(value) for value in row] for row in rows]
    kept = [i for i, column in enumerate(columns) if column not in timed]
    widths = {i: max([len(columns[i]), *(len(row[i]) for row in cells)]) for i in kept}
    header = "  ".join(columns[i].ljust(widths[i]) for i in kept).rstrip()
    body = ["  ".join(row[i].ljust(widths[i]) for i in kept).rstrip() for row in cells]
    plain = "\n".join([*([title] if title else []), header, *body])
    head_html = "".join(f"<th style='text-align:left'>{esc(c)}</th>" for c in columns)
    rows_html = "".join(
        "<tr>"
        + "".join(
            f"<td style='text-align:left'>{time_html(v) if c in timed else esc(v)}</td>"
            for c, v in zip(columns, row, strict=True)
        )
        + "</tr>"
        for row in cells
    )
    caption = f"<caption style='text-align:left'>{esc(title)}</caption>" if title else ""
    html_text = (
        f"<table>{caption}<thead><tr>{head_html}</tr></thead><tbody>{rows_html}</tbody></table>"
    )
    payload = {"title": title, "columns": list(columns), "rows": [list(r) for r in cells]}
    return bundle(kind, payload, html_text=html_text, plain=plain)


def stacked(first: Rendered, second: Rendered) -> Rendered:
    """`second` (a table) below `first` (a table) in one output: the payload lists it under
    the first's `below`, which the lab renderer draws after it."""
    data = dict(first.data)
    payload = first.data[MIME_TYPE]
    data[MIME_TYPE] = {**payload, "below": [*payload.get("below", []), second.data[MIME_TYPE]]}
    data["text/html"] = f"{first.data['text/html']}{second.data['text/html']}"
    data["text/plain"] = f"{first.data['text/plain']}\n\n{second.data['text/plain']}"
    return Rendered(data)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format_number(value)
    return "" if value is None else str(value)
