"""What PythonExec captured, for people and for the model: mimebundles, matplotlib figures
rendered to PNG, and image blocks within the model's caps.

matplotlib is never imported here: figures are looked for only when the user's code already
imported `matplotlib.pyplot`.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import io
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from IPython.core.displayhook import CapturingDisplayHook
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.display import display
from IPython.utils.capture import RichOutput

from ...core.types import ContentBlock

MAX_IMAGES = 4
"""Image blocks the model gets from one PythonExec call at most."""
MAX_IMAGE_SIDE = 1568
"""Pixels of an image's long side the model gets at most (larger ones are scaled down)."""
MAX_IMAGE_BYTES = 1_000_000
"""Bytes of one PNG the model gets at most."""
FIGURE_DPI = 100
PNG = "image/png"
INTERRUPTED_LINE = "[interrupted]"
"""The line a run of code stopped by an interrupt ends with (the card says "interrupted")."""
TAIL_LINES = 5
"""The newest lines of a running call's output shown live."""
STREAM_INTERVAL = 0.25
"""The most often a running call's newest output is reported."""
_OWN = contextvars.ContextVar("toolhost_own_output", default=False)
Bundle = dict[str, Any]
"""A Jupyter mimebundle: ``{"data": {mime: value}, "metadata": {...}}``."""


def _figure_repr(figure: Any) -> str:
    try:
        return repr(figure)
    except Exception:
        return "<Figure>"


def bundle(data: Any, metadata: Any) -> Bundle:
    """A JSON-safe mimebundle (binary values, such as PNG bytes, as base64 text)."""
    clean = {
        str(mime): base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
        for mime, v in dict(data or {}).items()
    }
    return {"data": clean, "metadata": dict(metadata or {})}


def plain_text(bundle: Bundle | None) -> str:
    text = (bundle or {}).get("data", {}).get("text/plain")
    return text if isinstance(text, str) else ""


def has_png(bundle: Bundle | None) -> bool:
    return bundle is not None and PNG in bundle["data"]


def result_bundle(shell: Any, value: Any, *, fallback: str) -> Bundle:
    """The value formatted as a cell's Out (a DataFrame gets text/html beside text/plain)."""
    try:
        data, metadata = shell.display_formatter.format(value)
    except Exception:
        data, metadata = {}, {}
    if not data.get("text/plain"):
        data = {**data, "text/plain": fallback}
    return bundle(data, metadata)


def _pyplot() -> Any:
    """`matplotlib.pyplot` when the user's code already imported it (never imported here)."""
    return sys.modules.get("matplotlib.pyplot")


def figure_states() -> dict[int, tuple[Any, bool]]:
    """The open figures: number -> (figure, stale); the current figure is left as it is."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if _pyplot() is None or helpers is None:
        return {}
    states: dict[int, tuple[Any, bool]] = {}
    with contextlib.suppress(Exception):
        for manager in helpers.Gcf.get_all_fig_managers():
            figure = manager.canvas.figure
            states[int(manager.num)] = (figure, bool(getattr(figure, "stale", False)))
    return states


def new_figures(before: dict[int, tuple[Any, bool]], *, skip: Any = None) -> list[Bundle]:
    """Figures the call created (rendered to PNG, then closed so the inline backend does not
    draw them again) and figures open before that it drew on (rendered, left open)."""
    plt = _pyplot()
    if plt is None:
        return []
    bundles: list[Bundle] = []
    for number, (figure, stale) in figure_states().items():
        known = before.get(number)
        created = known is None or known[0] is not figure
        changed = known is not None and not created and stale and not known[1]
        if not (created or changed):
            continue
        if figure is not skip:
            bundle = _render_figure(figure)
            if bundle is not None:
                bundles.append(bundle)
        if created:
            with contextlib.suppress(Exception):
                plt.close(figure)
    return bundles


def _render_figure(figure: Any) -> Bundle | None:
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png", bbox_inches="tight", dpi=FIGURE_DPI)
    except Exception:
        return None
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    data = {PNG: encoded, "text/plain": _figure_repr(figure)}
    return {"data": data, "metadata": {}}


def model_content(text: str, displays: Sequence[Bundle]) -> str | list[ContentBlock]:
    """The text, or the text and the displays' PNGs as image blocks (capped, scaled down)."""
    pngs = [b["data"][PNG] for b in displays if isinstance(b["data"].get(PNG), str)]
    if not pngs:
        return text
    images: list[ContentBlock] = []
    notes: list[str] = []
    for encoded in pngs[:MAX_IMAGES]:
        fitted, note = _fit_png(encoded)
        if note:
            notes.append(note)
        if fitted is not None:
            source = {"type": "base64", "media_type": PNG, "data": fitted}
            images.append({"type": "image", "source": source})
    if len(pngs) > MAX_IMAGES:
        extra = len(pngs) - MAX_IMAGES
        notes.append(
            f"[{extra} more image{'s' if extra > 1 else ''} not shown: "
            f"at most {MAX_IMAGES} per result]"
        )
    full = "\n\n".join([text, *notes])
    if not images:
        return full
    return [{"type": "text", "text": full}, *images]


def _fit_png(encoded: str) -> tuple[str | None, str | None]:
    """The PNG (base64) within the side and byte caps, and a note when it had to be left out."""
    try:
        raw = base64.b64decode(encoded, validate=False)
    except Exception:
        return None, "[image omitted: not valid base64]"
    try:
        from PIL import Image
    except ImportError:
        if len(raw) > MAX_IMAGE_BYTES:
            return None, f"[image omitted: {_megabytes(len(raw))}, over the 1 MB cap]"
        return encoded, None
    try:
        image: Any = Image.open(io.BytesIO(raw))
        image.load()
    except Exception:
        if len(raw) > MAX_IMAGE_BYTES:
            return None, f"[image omitted: {_megabytes(len(raw))}, over the 1 MB cap]"
        return encoded, None
    side = max(image.size)
    if side <= MAX_IMAGE_SIDE and len(raw) <= MAX_IMAGE_BYTES:
        return encoded, None
    scale = min(1.0, MAX_IMAGE_SIDE / side)
    for _ in range(8):
        size = (max(1, round(image.size[0] * scale)), max(1, round(image.size[1] * scale)))
        resized = image.resize(size, Image.Resampling.LANCZOS) if scale < 1.0 else image
        buffer = io.BytesIO()
        resized.save(buffer, format="PNG", optimize=True)
        if buffer.tell() <= MAX_IMAGE_BYTES:
            return base64.b64encode(buffer.getvalue()).decode("ascii"), None
        scale *= 0.7
    return None, f"[image omitted: {_megabytes(len(raw))}, over the 1 MB cap]"


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


# ── capturing a call's output while it streams ────────────────────────────────────────────


@contextlib.contextmanager
def own_output() -> Iterator[None]:
    """What the cell's own view displays inside this block goes to the notebook, even while
    a call's output is being captured (the live panel, streaming text)."""
    token = _OWN.set(True)
    try:
        yield
    finally:
        _OWN.reset(token)


class _Tail:
    """The newest lines printed (stdout and stderr together), reported as they come."""

    def __init__(self, report: Callable[[tuple[str, ...], int], None]) -> None:
        self._report = report
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)
        self._partial = ""
        self._count = 0
        self._reported = 0.0

    def add(self, text: str) -> None:
        *done, self._partial = (self._partial + text).split("\n")
        self._count += len(done)
        self._lines.extend(line for line in done if line.strip())
        now = time.perf_counter()
        if now - self._reported >= STREAM_INTERVAL:
            self._reported = now
            self.flush()

    def flush(self) -> None:
        partial = [self._partial] if self._partial.strip() else []
        shown = (*self._lines, *partial)
        if shown:
            self._report(tuple(shown)[-TAIL_LINES:], self._count + len(partial))


class _Stream(io.StringIO):
    """Collects what the code prints and reports it to `tail` as it comes. It says it is
    UTF-8 (a `StringIO` says None, which some libraries read as "no terminal encoding")."""

    encoding = "utf-8"

    def __init__(self, tail: _Tail) -> None:
        super().__init__()
        self._tail = tail

    def write(self, text: str) -> int:
        written = super().write(text)
        self._tail.add(text)
        return written


class CapturedIO:
    """What a block printed and displayed (IPython's `CapturedIO`, with live streams)."""

    def __init__(self, stdout: io.StringIO, stderr: io.StringIO, outputs: list[Any]) -> None:
        self._stdout, self._stderr, self._outputs = stdout, stderr, outputs

    @property
    def outputs(self) -> list[Any]:

        return [RichOutput(**kwargs) for kwargs in self._outputs]

    @property
    def stdout(self) -> str:
        return self._stdout.getvalue()

    @property
    def stderr(self) -> str:
        return self._stderr.getvalue()


@contextlib.contextmanager
def streaming_capture(
    shell: Any, report: Callable[[tuple[str, ...], int], None]
) -> Iterator[CapturedIO]:
    """Like IPython's `capture_output(display=True)`, and what is printed is reported as it
    comes (`report(newest_lines, lines_so_far)`), so a running call's card shows it live.
    Displays the cell's own view makes (`own_output`) still reach the notebook."""

    real_pub = shell.display_pub

    class Publisher(CapturingDisplayPublisher):
        """Captures what the code displays, and is the kernel's publisher in every other
        respect: ipykernel handles comm messages (a click, a view count) beside the
        awaiting cell and calls `set_parent`, `register_hook` and the like on whatever
        `shell.display_pub` is at that moment; those reach the real one."""

        def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            if _OWN.get():
                real_pub.publish(data, metadata, *args, **kwargs)
            else:
                super().publish(data, metadata, *args, **kwargs)

        def clear_output(self, wait: bool = False) -> None:
            if _OWN.get():
                real_pub.clear_output(wait)
            else:
                super().clear_output(wait)

        def set_parent(self, parent: Any) -> None:
            real_pub.set_parent(parent)

        def __getattr__(self, name: str) -> Any:
            # Only for names this class lacks (the kernel publisher's session, socket,
            # topic, hooks, parent header, ...).
            return getattr(real_pub, name)

    tail = _Tail(report)
    stdout, stderr = _Stream(tail), _Stream(tail)
    publisher = Publisher()
    saved = sys.stdout, sys.stderr, sys.displayhook
    sys.stdout, sys.stderr = stdout, stderr
    shell.display_pub = publisher
    sys.displayhook = CapturingDisplayHook(shell=shell, outputs=publisher.outputs)
    try:
        yield CapturedIO(stdout, stderr, publisher.outputs)
    finally:
        sys.stdout, sys.stderr, sys.displayhook = saved
        shell.display_pub = real_pub
        tail.flush()


def ipython_display(obj: Any, **kwargs: Any) -> Any:
    """IPython's `display`, marked as the cell's own output (see `own_output`)."""

    with own_output():
        handle = display(obj, **kwargs)
    return None if handle is None else _OwnHandle(handle)


class _OwnHandle:
    """A display handle whose updates reach the notebook even while a call's output is
    being captured (the live panel moves while PythonExec runs)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def update(self, obj: Any) -> None:
        with own_output():
            self._handle.update(obj)
