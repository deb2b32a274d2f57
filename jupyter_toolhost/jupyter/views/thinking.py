"""The "Thinking" section of a model response: extended thinking, collapsed, above its cards.

One section holds the thinking blocks a response streamed before anything else (text, a
tool call) came; it has the three forms of `render`. While it streams it lives in a
transient display that starts and ends as `EMPTY_THINKING` (nbval keeps only that first,
empty, display and the stored notebook keeps the last, empty, update: the same); when the
section ends it is shown once, final, in a display of its own. Both are a `<details>`
without ``open``: collapsed until a person opens it.

- A ``thinking`` block's text is shown whole (in HTML, in a height-capped box).
- A ``redacted_thinking`` block (encrypted by the API's safety systems) shows as a line that
  says so; its data goes back to the model unread.
- A ``thinking`` block with no text (``display: "omitted"``: a signature only) shows as a
  line that says the text was not returned.

`text/plain` holds the header and those lines, not the thinking itself. Nothing here varies
between two replays of a cassette, and nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ...core.numbers import format_number
from .render import BORDER, FG2, MUTED, PRE, Rendered, bundle, esc

PartKind: TypeAlias = Literal["text", "redacted", "omitted", "streaming"]

REDACTED_LINE = "Thinking redacted by the API (encrypted; passed back to the model unread)."
OMITTED_LINE = "Thinking text not returned by the API (display: omitted; only its signature)."
LIVE_TAIL_CHARS = 20_000
"""While a section streams, its display carries at most this much of the newest text (the
final display carries all of it)."""
_BOX = f"margin:2px 0;color:{FG2};font-size:13px"
_BODY = f"{PRE};border-left:3px solid {BORDER};padding-left:8px;font-size:13px"


@dataclass(slots=True)
class ThinkingPart:
    """One thinking (or redacted_thinking) block of a response."""

    redacted: bool
    text: str = ""

    def kind(self, *, live: bool) -> PartKind:
        if self.redacted:
            return "redacted"
        if self.text:
            return "text"
        return "streaming" if live else "omitted"


@dataclass(slots=True)
class ThinkingSection:
    """The thinking blocks of one model response that came before its text and calls."""

    key: str
    """Names the section in the cell's session (the same in its live and final display,
    and on every replay), so the lab renderer keeps it open once a person opened it."""
    response: int
    """Which model response of the cell thought, from 1."""
    parts: list[ThinkingPart] = field(default_factory=list)

    @property
    def characters(self) -> int:
        return sum(len(part.text) for part in self.parts if not part.redacted)


def section_header(section: ThinkingSection, *, live: bool) -> str:
    """`Thinking · 1,234 characters` (`Thinking…` while it streams)."""
    head = "Thinking…" if live else "Thinking"
    count = section.characters
    return f"{head} · {format_number(count)} characters" if count else head


def _shown_parts(section: ThinkingSection, *, live: bool) -> list[ThinkingPart]:
    """The parts a display carries: all of them, or while live only the newest
    `LIVE_TAIL_CHARS` of text (older text is cut from the front, marked with "…")."""
    if not live or section.characters <= LIVE_TAIL_CHARS:
        return list(section.parts)
    budget = LIVE_TAIL_CHARS
    shown: list[ThinkingPart] = []
    for part in reversed(section.parts):
        if part.redacted or not part.text:
            shown.append(part)
        elif budget > 0:
            text = part.text if len(part.text) <= budget else "…" + part.text[-budget:]
            budget -= len(part.text)
            shown.append(ThinkingPart(redacted=False, text=text))
    return shown[::-1]


def thinking_display(section: ThinkingSection, *, live: bool = False) -> Rendered:
    """The section: its text collapsed under a header, then a line per redacted or
    text-less block (what the page shows without opening anything)."""
    parts = _shown_parts(section, live=live)
    kinds = [part.kind(live=live) for part in parts]
    header = section_header(section, live=live)
    collapsible = live or "text" in kinds
    notes = [
        REDACTED_LINE if kind == "redacted" else OMITTED_LINE
        for kind in kinds
        if kind in ("redacted", "omitted")
    ]
    html_parts = []
    if collapsible:
        body = "".join(
            f'<div style="{_BODY}">{esc(part.text)}</div>'
            for part, kind in zip(parts, kinds, strict=True)
            if kind in ("text", "streaming") and part.text
        )
        html_parts.append(
            f'<details class="toolhost-thinking" style="{_BOX}">'
            f'<summary style="cursor:pointer">{esc(header)}</summary>{body}</details>'
        )
    html_parts.extend(
        f'<div class="toolhost-thinking-note" style="{MUTED}">{esc(line)}</div>' for line in notes
    )
    plain = "\n".join([*([f"▸ {header}"] if collapsible else []), *notes])
    payload = {
        "key": section.key,
        "response": section.response,
        "live": live,
        "characters": section.characters,
        "blocks": [
            {"kind": kind, "text": part.text if kind in ("text", "streaming") else ""}
            for part, kind in zip(parts, kinds, strict=True)
        ],
    }
    return bundle("thinking", payload, html_text="".join(html_parts), plain=plain)


EMPTY_THINKING = bundle(
    "thinking",
    {"key": "", "response": 0, "live": True, "characters": 0, "blocks": []},
    html_text="",
    plain="",
)
"""What a streaming section's display starts and ends as, so every run leaves the same."""
