"""Text shortened for a line of a card, a record or a title: one line, and a cut that says so.

Every view that shortens what a tool, a model or a person wrote goes through `one_line`, so
no view cuts a word in two without a mark, and none shows a cut text as if it were whole.
"""

from __future__ import annotations

ELLIPSIS = "…"
WORD_BACKTRACK = 20
"""How far back from the limit a cut looks for a space, so it falls between words."""


def one_line(text: str, limit: int) -> str:
    """`text` on one line (runs of white space folded to one space), at most `limit`
    characters; a shortened text ends with "…", cut between words when a space lies within
    `WORD_BACKTRACK` characters of the limit."""
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    room = max(limit - len(ELLIPSIS), 0)
    head = folded[:room]
    space = head.rfind(" ", max(room - WORD_BACKTRACK, 0))
    if space > 0 and not folded[room : room + 1].isspace():
        head = head[:space]
    return head.rstrip() + ELLIPSIS
