"""Tool call cards: what one call looks like (status, why, duration, the code it ran, its
checklist, a sub-agent's calls, a preview of its result) in a batch and in the live panel.

Each card has the three forms of `render`: the JSON payload for the lab renderer, HTML for
every other front end, deterministic plain text. Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias

from ...core.numbers import format_number, tokens_added
from ...core.types import PermissionResult
from .previews import (
    PREVIEW_CHARS,
    PersistedOutput,
    clip,
    cut_marker,
    persisted_output_of,
    persisted_plain,
    preview_of_persisted,
    result_html,
    saved_path_in,
)
from .render import (
    ACCENT,
    BORDER,
    ERROR,
    FG2,
    MUTED,
    PRE,
    SUCCESS,
    WARN,
    Rendered,
    bundle,
    esc,
    short,
    shown_source,
    time_html,
    tokens_html,
)

__all__ = ["PREVIEW_CHARS", "PersistedOutput", "saved_path_in"]

if TYPE_CHECKING:
    from ...orchestration.events import StopCause


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
    "queued": FG2,
    "running": ACCENT,
    "done": SUCCESS,
    "error": ERROR,
    "denied": WARN,
    "cancelled": FG2,
}
"""Colours of the status marks (glyphs); a status word is in the secondary text colour."""
_BOX = (
    f"border:1px solid {BORDER};border-radius:4px;padding:4px 8px;margin:2px 0;"
    "font-family:var(--jp-code-font-family,monospace);font-size:13px;"
    "overflow-wrap:anywhere"
)
_CHECK_MARK = {"pending": "☐", "in_progress": "◐", "completed": "☑"}


APPROVAL = "approval"
"""What an approval prompt waits for (`Wait.what`)."""


class Wait(NamedTuple):
    """A time a call waited for a person: an approval prompt, or a question it asked."""

    asked: float
    answered: float
    what: str = APPROVAL
    """What the person was asked for: `APPROVAL`, or a call's own ("your answer")."""


def waiting_label(what: str) -> str:
    """The status word of a card while it waits for `what`: "waiting for you" for an
    approval, "waiting for your answer" for a question."""
    return "waiting for you" if what == APPROVAL else f"waiting for {what}"


def waited_label(seconds: float, what: str) -> str:
    """How long a call waited: "waited 8.0 s for approval" / "… for your answer"."""
    return f"waited {format_number(seconds, 'seconds')} for {what}"


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
    code: tuple[str, str] | None = None
    """(language, source) of the code the call runs, as its tool declares it."""
    insertable: bool = False
    """The code can become a notebook cell as it is (Python run in this kernel)."""
    tail: tuple[str, ...] = ()
    """The newest output lines of a running call."""
    fraction: float | None = None
    """How far a running call is (0..1), when it reports it."""
    checklist: tuple[dict[str, Any], ...] | None = None
    """The checklist the call reported: `content`, `status`, `active_form` per item."""
    children: list[CallCard] = field(default_factory=list)
    """Calls a sub-agent made inside this call, in the order they were queued."""
    displays: tuple[dict[str, Any], ...] = ()
    """Rich outputs the call made for people (plots, tables): shown right under its card."""
    waits: list[Wait] = field(default_factory=list)
    """Each time the call waited for a person: its approval prompts and its own questions."""
    stopped_by: StopCause | None = None
    """Why a cancelled call was stopped: a failed sibling, an interrupt, a discarded message."""
    response: int = 0
    """Which model response of its cell asked for the call, from 1 (0: not known). Each
    response numbers its batches from 1, so (response, batch) names one batch of a cell."""
    asked: float | None = None
    """When the wait for a person the call is in now began (None: not waiting)."""
    asked_for: str = APPROVAL
    """What that wait is for (`Wait.what`)."""
    interrupted: bool = False
    """The call was stopped by an interrupt (a stopped run of code, a cancelled command)."""
    tokens: int | None = None
    """What the result adds to the conversation, in tokens (None: not known)."""
    tokens_measured: bool = False
    """`tokens` came from the usage of the request that carried the result (else estimated)."""
    image_sizes: tuple[tuple[int, int], ...] = ()
    """(width, height) in px of each image the result sent, at the size it was sent."""

    @property
    def tokens_text(self) -> str:
        """ "1,234 tokens", "≈1,234 tokens · image 1092×1092 px", or '' when not known."""
        if self.tokens is None:
            return ""
        return tokens_added(self.tokens, measured=self.tokens_measured, images=self.image_sizes)

    @property
    def wall(self) -> float | None:
        """From start to end, waits for a person included."""
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    @property
    def waited(self) -> float:
        """Seconds the call waited for a person (or an approver) to decide or answer."""
        return sum(max(0.0, wait.answered - wait.asked) for wait in self.waits)

    def waited_by(self, now: float) -> float:
        """Seconds of waiting for a person up to `now`, the wait in progress included."""
        current = max(0.0, now - self.asked) if self.asked is not None else 0.0
        return self.waited + current

    @property
    def duration(self) -> float | None:
        """The call's run time: its wall time without the waits for a person."""
        wall = self.wall
        return None if wall is None else max(0.0, wall - self.waited)

    @property
    def label(self) -> str:
        """The status word people read: "waiting for you" while an approval prompt waits
        ("waiting for your answer" while its own question does), "interrupted" for a call
        an interrupt stopped, else the status."""
        if self.status == "running" and self.asked is not None:
            return waiting_label(self.asked_for)
        if self.status == "cancelled" and (self.interrupted or self.stopped_by == "interrupt"):
            return "interrupted"
        if self.status == "error" and self.interrupted:
            return "interrupted"
        return self.status

    @property
    def final(self) -> bool:
        return self.status not in ("queued", "running")


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
_FIXED_REASONS = ("default", "tool", "safety", "other")
"""Decision reasons whose text is made from the call alone, so it is the same on every run.
A rule and a mode are shown too; an approver's or a hook's own words are not (they may hold
what a person typed, or a time): those say only who decided."""


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
        "source": shown_source(reason.source) if reason else None,
    }


def decision_text(card: CallCard) -> str:
    """The deterministic "why" of a card, else ''; never just the status word again."""
    decision = card.decision
    if not decision:
        return ""
    kind, reason = decision.get("kind"), str(decision.get("reason") or "")
    allowed = decision.get("behavior") == "allow"
    match kind:
        case "rule":
            why = reason
        case "mode":
            why = f"mode {reason}" if reason else ""
        case "approver":
            why = "allowed in the prompt" if allowed else "denied in the prompt"
        case "hook":
            why = "by a hook"
        case "classifier":
            why = "by the auto-mode classifier"
        case _ if kind in _FIXED_REASONS:
            why = reason
        case _:
            why = ""
    return "" if why.strip().lower() in (card.status, "denied", "allowed") else why


def card_plain(card: CallCard, *, depth: int = 0) -> str:
    """Deterministic text: status mark, name, summary, why; where big output was saved;
    the checklist and a sub-agent's calls, indented."""
    summary = header_summary(card)
    line = f"{_STATUS_MARK[card.status]} {card.name}" + (f": {summary}" if summary else "")
    why = decision_text(card)
    if why:
        line += f" ({why})"
    lines = [line]
    if card.code is not None and not _code_fits_header(card):
        lines += [f"  │ {code_line}" for code_line in card.code[1].rstrip().splitlines()]
    persisted = persisted_output(card) if card.final else None
    if persisted is not None:
        lines.append(persisted_plain(persisted))
    if card.final and card.tail:
        lines.append(f"  printed before the stop: {len(card.tail)} last lines")
    if card.checklist:
        lines += [f"  {_checklist_line(item)}" for item in card.checklist]
    for child in card.children:
        lines += ["  " + text for text in card_plain(child, depth=depth + 1).split("\n")]
    if card.displays and card.final:
        lines.append(f"  {_displays_label(card)} below")
    return "\n".join(lines)


def _checklist_line(item: Mapping[str, Any]) -> str:
    status = str(item.get("status", "pending"))
    text = str(item.get("content", ""))
    if status == "in_progress" and item.get("active_form"):
        text = str(item["active_form"])
    return f"{_CHECK_MARK.get(status, '☐')} {text}"


def _displays_label(card: CallCard) -> str:
    count = len(card.displays)
    return f"{count} output" + ("" if count == 1 else "s")


def card_html(card: CallCard, *, live: bool = False, now: float | None = None) -> str:
    """A card: name, input summary, status, why, duration, the code that ran, a checklist,
    a sub-agent's calls, the result preview; progress, tail and elapsed time when `live`."""
    color = _STATUS_COLOR[card.status]
    head = (
        f'<span style="color:{color}">{_STATUS_MARK[card.status]}</span> '
        f"<b>{esc(card.name)}</b> <code>{esc(header_summary(card))}</code> "
        f'<span style="color:{FG2}" data-status="{card.status}">{card.label}</span>'
    )
    why = decision_text(card)
    if why:
        head += f' <span style="color:{FG2}">({esc(why)})</span>'
    if card.final and card.duration is not None:
        head += " " + time_html(format_number(card.duration, "seconds"))
        for what, seconds in waits_by_kind(card).items():
            head += " " + time_html(f"· {waited_label(seconds, what)}")
    if card.final and card.tokens_text:
        head += " " + tokens_html(f"· {card.tokens_text}")
    elif live and card.asked is not None and now is not None:
        head += " " + time_html(f"for {format_number(max(0.0, now - card.asked), 'seconds')}")
    elif live and card.started is not None and now is not None:
        ran = max(0.0, now - card.started - card.waited)
        head += " " + time_html(f"for {format_number(ran, 'seconds')}")
    body = ""
    if live and not card.final:
        body += _progress_html(card)
    if card.checklist:
        body += checklist_html(card.checklist)
    if card.code is not None and not _code_fits_header(card):
        body += _code_html(card.code)
    if card.children:
        inner = "".join(card_html(child, live=live, now=now) for child in card.children)
        calls = f"{len(card.children)} call" + ("" if len(card.children) == 1 else "s")
        body += (
            f'<div style="margin:2px 0 2px 10px;padding-left:8px;border-left:2px solid {BORDER}">'
            f'<div style="{MUTED}">sub-agent: {calls}</div>{inner}</div>'
        )
    if card.final and card.tail:
        body += (
            f'<div style="{MUTED}">printed before the stop</div>'
            f'<pre style="{PRE}">{esc(chr(10).join(card.tail))}</pre>'
        )
    if card.final and card.result:
        body += result_html(card.result, persisted_output(card))
    if card.displays and card.final:
        body += f'<div style="{MUTED}">{_displays_label(card)} below ↓</div>'
    return f'<div style="{_BOX}">{head}{body}</div>'


def waits_by_kind(card: CallCard) -> dict[str, float]:
    """Seconds the card waited, by what it waited for (approval first)."""
    total: dict[str, float] = {}
    for wait in sorted(card.waits, key=lambda w: w.what != APPROVAL):
        total[wait.what] = total.get(wait.what, 0.0) + max(0.0, wait.answered - wait.asked)
    return total


def header_summary(card: CallCard) -> str:
    """The one-line summary in a card's header; for code shown whole below the header, just
    its first line (the code itself is never squeezed onto one line)."""
    if card.code is None or _code_fits_header(card):
        return short(card.summary, 100)
    lines = [line for line in card.code[1].splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    shown = short(first, 80)
    return shown + (" …" if len(lines) > 1 and not shown.endswith("…") else "")


def _code_fits_header(card: CallCard) -> bool:
    """A one-line command that the header shows whole needs no code block of its own."""
    assert card.code is not None
    source = card.code[1]
    return "\n" not in source.strip() and len(source) <= 100 and not card.insertable


def _progress_html(card: CallCard) -> str:
    parts = []
    if card.progress:
        parts.append(f'<i style="color:{FG2}">{esc(short(card.progress, 120))}</i>')
    if card.fraction is not None:
        value = min(1.0, max(0.0, card.fraction))
        parts.append(
            f'<progress max="1" value="{value:.3f}" style="width:12em"></progress> '
            f'<span style="{MUTED}">{value:.0%}</span>'
        )
    html_text = f"<div>{' '.join(parts)}</div>" if parts else ""
    if card.tail:
        html_text += f'<pre style="{PRE};color:{FG2}">{esc(chr(10).join(card.tail))}</pre>'
    return html_text


def checklist_html(items: Sequence[Mapping[str, Any]]) -> str:
    """A checklist: ☐ pending, ◐ in progress (its active form, bold), ☑ completed."""
    done = sum(item.get("status") == "completed" for item in items)
    rows = []
    for item in items:
        status = str(item.get("status", "pending"))
        text = esc(_checklist_line(item))
        if status == "in_progress":
            text = f"<b>{text}</b>"
        elif status == "completed":
            text = f'<span style="color:{FG2};text-decoration:line-through">{text}</span>'
        rows.append(f'<li data-status="{esc(status)}">{text}</li>')
    return (
        f'<div style="{MUTED}">checklist: {done}/{len(items)} done</div>'
        f'<ul style="list-style:none;padding-left:4px;margin:2px 0">{"".join(rows)}</ul>'
    )


def _code_html(code: tuple[str, str]) -> str:
    language, source = code
    lines = source.count("\n") + 1
    label = f"{language} code, {lines} line" + ("" if lines == 1 else "s")
    return (
        f'<details open><summary style="{MUTED}">{esc(label)}</summary>'
        f'<pre style="{PRE}">{esc(source)}</pre></details>'
    )


def card_json(card: CallCard, *, now: float | None = None) -> dict[str, Any]:
    """A card for the payload: everything, the result clipped, the full persisted path,
    the code, the checklist and the sub-agent's calls; `elapsed` while it runs."""
    data = asdict(card)
    for key in ("children", "displays", "code", "insertable"):
        data.pop(key)
    data["duration"] = card.duration
    data["waited"] = card.waited
    # What the lab extension shows beside the run time, written here once.
    data["waited_text"] = [waited_label(s, what) for what, s in waits_by_kind(card).items()]
    data["label"] = card.label
    data["tokens_text"] = card.tokens_text if card.final else ""
    shown, cut = clip(card.result)
    data["result"] = shown
    data["cut"] = cut_marker(shown=shown, path=None, total_chars=len(card.result)) if cut else None
    data["tail"] = list(card.tail)
    data["checklist"] = None if card.checklist is None else [dict(i) for i in card.checklist]
    data["code"] = (
        None
        if card.code is None
        else {"language": card.code[0], "source": card.code[1], "insertable": card.insertable}
    )
    data["children"] = [card_json(child, now=now) for child in card.children]
    data["displays_below"] = len(card.displays) if card.final else 0
    # While a prompt waits, the clock is the wait's; else the run's so far.
    since = card.asked if card.asked is not None else card.started
    data["elapsed"] = (
        now - since if now is not None and since is not None and not card.final else None
    )
    persisted = persisted_output(card) if card.final else None
    if persisted is not None:
        preview = preview_of_persisted(card.result)
        data["persisted_path"] = persisted.path
        data["saved"] = {
            "path": persisted.shown_path,
            "size": persisted.size,
            "cut": cut_marker(shown=preview, path=persisted.path),
        }
    return data


def persisted_output(card: CallCard) -> PersistedOutput | None:
    """The card's persisted output (see `previews.persisted_output_of`)."""
    return persisted_output_of(card.result, card.persisted_path, card.original_size)


def batch_display(cards: Sequence[CallCard], *, batch: int) -> Rendered:
    """The final cards of one batch, grouped; calls in the order the model sent them.
    Batches count from 1 within a cell's conversation."""
    concurrent = len(cards) > 1
    title = f"Batch {batch} · {len(cards)} calls ran concurrently" if concurrent else ""
    inner = "".join(card_html(card) for card in cards)
    if concurrent:
        started = [c.started for c in cards if c.started is not None]
        ended = [c.ended for c in cards if c.ended is not None]
        wall = (
            " " + time_html(f"in {format_number(max(ended) - min(started), 'seconds')}")
            if started and ended
            else ""
        )
        inner_html = (
            f'<div style="border-left:3px solid {ACCENT};padding-left:6px;margin:4px 0">'
            f'<div style="color:{FG2};font-size:13px">{esc(title)}{wall}</div>{inner}</div>'
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
    cards: Iterable[CallCard],
    *,
    status: str = "",
    elapsed: float | None = None,
    now: float | None = None,
    checklist: Sequence[Mapping[str, Any]] | None = None,
) -> Rendered:
    """The live panel: cards still running, with progress, output tails and elapsed times,
    and the cell's latest checklist (transient; nbval keeps only the first, empty, display).
    Its first line is `status` ("running", "Waiting for you") and the clock `elapsed` (the
    seconds the cell ran, or the seconds the person was waited for), written
    "running · 12 s" here and by the lab extension alike, which get both in the payload."""
    shown = list(cards)
    inner = "".join(card_html(card, live=True, now=now) for card in shown)
    if checklist:
        inner = checklist_html(checklist) + inner
    line = status
    if status and elapsed is not None:
        line += f" · {format_number(elapsed, 'clock')}"
    if line:
        inner = f'<div style="{MUTED}">{esc(line)}</div>' + inner
    plain = "\n".join(
        [
            line,
            *(_checklist_line(item) for item in checklist or ()),
            *(card_plain(card) for card in shown),
        ]
    ).strip()
    payload = {
        "calls": [card_json(c, now=now) for c in shown],
        "status": (status or "running") if shown else "idle",
        "elapsed": elapsed,
        "checklist": [dict(item) for item in checklist] if checklist else None,
    }
    return bundle("live", payload, html_text=inner, plain=plain)


EMPTY_LIVE = live_display(())
"""What the live panel starts and ends as, so every run leaves the same output behind."""
