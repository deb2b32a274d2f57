"""The model's words in a cell: Markdown, streamed while they arrive, final once they end.

- While a piece of text streams it is drawn in a transient display (its Markdown as
  cleaned `text/html` beside `text/plain`), redrawn at most every `STREAM_INTERVAL`. The
  display starts and ends as `EMPTY_ANSWER` (the lab extension draws nothing for it), so
  nbval, which keeps only a display's first form, and the stored notebook, which keeps its
  last, agree.
- When the piece ends (a call, a notice, the end of the response), it is shown once, final,
  as its own display: its Markdown rendered here to `text/html` and cleaned
  (`safe_html.markdown_html`: tables, code, links and lists kept, nothing that can run), for
  every front end alike (JupyterLab, Notebook 7, VS Code, nbviewer, nbconvert), and the text
  as the model wrote it in `text/plain` for nbval and terminals. The same text gives the same
  HTML, so a replay compares equal. No `text/markdown`: JupyterLab and Notebook 7 keep the
  raw HTML of a trusted output's Markdown, and a saved notebook is trusted when reopened.
- Records of decisions stay plain lines of the cell's stdout (monospace in every front end)
  and notices are displays of their own: neither reads as the model's Markdown.

Nothing here imports IPython or ipywidgets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from .render import Rendered, bundle
from .safe_html import markdown_html

ANSWER_METADATA = {"jupyter_toolhost": {"kind": "answer"}}
"""The metadata of a final piece of the model's words: what tells it apart from other HTML
displays (a DataFrame under a card) for a reader of the saved notebook."""
STREAM_INTERVAL = 0.1
"""The most often streaming text is redrawn (a delta that comes sooner waits for the next)."""

EMPTY_ANSWER = bundle("answer", {"live": True, "text": ""}, html_text="", plain="")
"""What a streaming answer's display starts and ends as (drawn as nothing)."""


def answer_display(text: str) -> Rendered:
    """The final form of a piece of the model's text."""
    return Rendered({"text/html": markdown_html(text), "text/plain": text}, ANSWER_METADATA)


def streaming_display(text: str) -> Rendered:
    """A piece of text while it streams (its Markdown so far)."""
    return Rendered({"text/html": markdown_html(text), "text/plain": text})


class AnswerStream:
    """One piece of the model's text at a time: drawn live, then shown final."""

    def __init__(self, display: Callable[..., Any]) -> None:
        self._display = display
        self._text = ""
        self._panel: Any = None
        self._drawn = 0.0
        self._due: asyncio.TimerHandle | None = None

    @property
    def open(self) -> bool:
        return self._panel is not None

    def add(self, delta: str) -> None:
        """A piece of text: opens the live display on the first, redraws it (throttled)."""
        if not delta:
            return
        self._text += delta
        if self._panel is None:
            self._panel = self._display(EMPTY_ANSWER, display_id=True)
            self._draw()
            return
        wait = STREAM_INTERVAL - (time.perf_counter() - self._drawn)
        if wait <= 0:
            self._draw()
        elif self._due is None:
            # With no running loop it is drawn on the next delta or at the end.
            with contextlib.suppress(RuntimeError):
                self._due = asyncio.get_running_loop().call_later(wait, self._draw)

    def _draw(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
        if self._panel is not None:
            self._drawn = time.perf_counter()
            self._panel.update(streaming_display(self._text))

    def end(self) -> None:
        """The piece is complete: empty its live display and show it, final."""
        if self._panel is None:
            return
        if self._due is not None:
            self._due.cancel()
            self._due = None
        self._panel.update(EMPTY_ANSWER)
        self._panel = None
        text, self._text = self._text, ""
        if text.strip():
            self._display(answer_display(text.strip("\n")))
