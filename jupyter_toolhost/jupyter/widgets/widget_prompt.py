"""Showing a widget in the asking cell and waiting for its answer: one way for every prompt.

The approval buttons (`approval`) and AskUserQuestion's form (`questions`) both show a widget
in the cell that runs the agent and wait, in that cell's awaiting coroutine, for a future a
click resolves (ipykernel >= 7.4 handles the click's comm message while the cell awaits).
`show_and_wait` does the part they share: display the widget with an empty `text/plain`
(`widget_bundle`), acknowledge typing while it waits (`comm_ack`), wait as `frontend` says
(a click, a timeout, or no front end at all), let typed text land, and, whatever happened,
disable the widget and empty its display (`DECIDED`) so only the record line stays. What the
answer means, and who may give it (an approval takes a click only from the client whose
cell asked), stays with each prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any, Literal, TypeAlias, TypeVar

from IPython.display import display

from ..views.render import Rendered
from .comm_ack import acknowledging
from .frontend import FrontEnd, Outcome

T = TypeVar("T")

DECIDED = Rendered({"text/plain": ""})
"""What a prompt's display becomes once it is decided, interrupted or not shown: nothing
(its record is the line printed right below it), so a saved notebook, an HTML export and
nbviewer keep no widget, and nbval compares the same empty text as when the prompt was
first shown."""


Fill: TypeAlias = Literal["allow", "always", "deny", "trust", "submit", "edit"]
FILLS: dict[Fill, str] = {
    "allow": "#2e7d32",
    "always": "#1565c0",
    "deny": "#c62828",
    "trust": "#a04600",
    "submit": "#1565c0",
    "edit": "#5d4037",
}
"""The fill of each prompt's main buttons, under white text: 5.1:1 (green), 5.8:1 (blue),
5.6:1 (red), 6.2:1 (amber), 9.3:1 (brown, Edit). ipywidgets' `button_style` fills are
JupyterLab's ``--jp-success/info/warn-color1``, under which white text is 4.1:1, 3.5:1 and
2.7:1 in the light theme. The label is read against its own fill, so one fixed pair reads
the same in every theme and in front ends without JupyterLab's variables."""


def ipywidgets() -> ModuleType:
    """The ipywidgets module, imported on the first call: the one place the front end
    imports it. Only a prompt about to be shown calls this, so `%load_ext` and a headless
    run (which shows none) never load it (`widgets.frontend` reads `sys.modules` for it)."""
    import ipywidgets as module  # pyright: ignore[reportMissingImports]

    return module  # pyright: ignore[reportUnknownVariableType]


def filled_button(label: str, fill: Fill, *, tooltip: str = "") -> Any:
    """An ipywidgets `Button` labelled `label`, white on the `fill` colour."""
    widgets = ipywidgets()
    return widgets.Button(
        description=label,
        tooltip=tooltip,
        style=widgets.ButtonStyle(button_color=FILLS[fill], text_color="white"),
    )


def widget_bundle(widget: Any) -> Rendered:
    """`widget` for display, with an empty `text/plain` beside its view (not the
    `VBox(children=(HTML(value=…` repr): what a notebook keeps if it is saved while the
    prompt waits, and what nbval compares (it keeps a display's first state)."""
    data = dict(widget._repr_mimebundle_())  # pyright: ignore[reportPrivateUsage]
    data["text/plain"] = ""
    return Rendered(data)


async def show_and_wait(
    front_end: FrontEnd,
    box: Any,
    answer: asyncio.Future[Any],
    *,
    limit: float | None,
    settle: Callable[[], Awaitable[T]] | None = None,
    close: Callable[[], None] | None = None,
    buttons: Sequence[Any] = (),
    interrupted: str,
    emit: Callable[[str], None],
) -> tuple[Outcome, T | None]:
    """Show `box` (made with `_view_count=0`) in the running cell and wait for `answer`
    (up to `limit` s when set; see `FrontEnd.wait`).

    Returns how the wait ended and, when it was answered, what `settle` made of it (run
    while typing is still acknowledged, so text typed just before the click lands first).
    An interrupt writes `interrupted` through `emit` and is raised again. `close` (which
    disables the widgets) runs in every case, and the display is emptied. Without `settle`
    the answer is what was answered; without `close`, `buttons` are disabled.
    """

    with acknowledging(front_end.shell):
        shown = display(widget_bundle(box), display_id=True)
        try:
            outcome = await front_end.wait(answer, box, limit=limit)
            if outcome != "answered":
                settled = None
            else:
                settled = await settle() if settle is not None else answer.result()
        except asyncio.CancelledError:
            emit(interrupted)
            raise
        finally:
            answer.cancel()
            if close is not None:
                close()
            for button in buttons:
                button.disabled = True
            if shown is not None:
                shown.update(DECIDED)
    return outcome, settled
