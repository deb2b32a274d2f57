"""`%agent undo [N] [--yes] [--force]`: show a checkpoint's diff, confirm, restore its files.

Without a number it undoes the newest cell whose changes are not undone yet. The diff is
shown first; then **Undo these changes** / **Cancel** buttons ask (their `on_click` only
resolves a future the awaiting cell waits on). A file changed since the agent wrote it, or in
a protected folder, asks a second time (**Restore them anyway** / **Skip them**). Where nobody
can click (nbclient, nbval, `jupyter console`), nothing is restored unless the line says so:
``--yes`` confirms the undo, ``--force`` also restores the changed files. The version an undo
replaces is kept as a checkpoint of its own, so ``%agent undo M`` brings it back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, Protocol

from IPython.display import display

from ...orchestration.checkpoints import Checkpoint, CheckpointStore, UndoPlan, undo_summary
from ..views.render import Rendered, bundle, esc, notice_display, stacked, table_display
from ..views.safe_html import widget_html
from ..widgets.approval import from_owner, message_session
from ..widgets.frontend import FrontEnd
from ..widgets.widget_prompt import ipywidgets, show_and_wait, widget_bundle
from .options import Command, UsageError


class AgentHost(Protocol):
    """What undo needs of `host.AgentHost` (which calls this module when a cell ends, so
    this module can't import it)."""

    session: Any

    def approver(self) -> Any: ...

    def _emit_line(self, text: str) -> None: ...


UNDO_LABEL = "Undo these changes"
CANCEL_LABEL = "Cancel"
FORCE_LABEL = "Restore them anyway"
SKIP_LABEL = "Skip them"

Answer = Literal["yes", "no"]


def checkpoint_store(host: AgentHost) -> CheckpointStore | None:
    """The checkpoints of the kernel's conversation (None: no conversation yet)."""
    session = host.session
    return None if session is None else session.checkpoints


def checkpoint_rows(store: CheckpointStore) -> list[tuple[Any, ...]]:
    """One row per checkpoint, for `%agent history`."""
    rows: list[tuple[Any, ...]] = []
    for checkpoint in store.checkpoints:
        if checkpoint.undoes is not None:
            state = f"undo of {checkpoint.undoes}"
        elif checkpoint.undone_by is not None:
            state = f"undone ({checkpoint.undone_by})"
        else:
            state = "kept"
        files = ", ".join(r.shown for r in checkpoint.files) or "-"
        skipped = f" (+{len(checkpoint.skipped)} not kept)" if checkpoint.skipped else ""
        rows.append((checkpoint.number, checkpoint.label or "-", files + skipped, state))
    return rows


def checkpoints_display(store: CheckpointStore) -> Rendered:
    columns = ("checkpoint", "prompt", "files", "state")
    return table_display(
        "checkpoints", columns, checkpoint_rows(store), title="checkpoints (%agent undo N)"
    )


def with_checkpoints(calls: Rendered, host: AgentHost) -> Rendered:
    """`%agent history`'s table of calls, with the checkpoints table below it (when any)."""
    store = checkpoint_store(host)
    if store is None or not store.checkpoints:
        return calls
    return stacked(calls, checkpoints_display(store))


def diff_display(plan: UndoPlan) -> Rendered:
    """What undoing `plan` changes: a header per file, then its diff (plain and escaped)."""
    checkpoint = plan.checkpoint
    parts: list[str] = [f"Undo checkpoint {checkpoint.number} ({checkpoint.label!r}):"]
    for item in plan.files:
        why = item.blocked or item.changed
        parts.append(f"{item.record.shown}" + (f" ({why})" if why else ""))
        if item.diff:
            parts.append(item.diff)
    text = "\n".join(parts)
    html_text = f'<pre class="toolhost-undo-diff" style="white-space:pre-wrap">{esc(text)}</pre>'
    return bundle("undo-diff", {"text": text}, html_text=html_text, plain=text)


async def run_undo(host: AgentHost, command: Command) -> Rendered:
    """`%agent undo`, in a cell of its own (it waits for the confirmation)."""
    store = checkpoint_store(host)
    if store is None:
        return notice_display("No conversation yet: nothing to undo.")
    number = _number(command.argument)
    checkpoint = store.get(number)
    if checkpoint is None:
        which = f"checkpoint {number}" if number is not None else "a cell's changes"
        return notice_display(f"No {which} to undo (%agent history lists the checkpoints).")
    return await undo_checkpoint(
        host, store, checkpoint, yes="--yes" in command.flags, force="--force" in command.flags
    )


async def undo_checkpoint(
    host: AgentHost, store: CheckpointStore, checkpoint: Checkpoint, *, yes: bool, force: bool
) -> Rendered:
    """Show the diff, ask (unless `yes`), ask again for changed files (unless `force`),
    restore, and say what happened."""

    if checkpoint.undone_by is not None:
        return notice_display(
            f"Checkpoint {checkpoint.number} was already undone; %agent undo "
            f"{checkpoint.undone_by} brings its changes back."
        )
    plan = store.plan_undo(checkpoint)
    display(diff_display(plan))
    front_end = host.approver().front_end
    if not yes:
        answer = await _ask(front_end, UNDO_LABEL, CANCEL_LABEL, host)
        if answer != "yes":
            return notice_display(_unconfirmed(answer, checkpoint.number, "--yes"))
    if plan.needs_force and not force:
        if yes:
            force = False  # --yes alone never overwrites a changed file
        else:
            display(notice_display(_second_question(plan), level="warning"))
            force = await _ask(front_end, FORCE_LABEL, SKIP_LABEL, host) == "yes"
    return _restore(store, plan, force=force)


def _restore(store: CheckpointStore, plan: UndoPlan, *, force: bool) -> Rendered:
    """Undo `plan` and say what happened, one line a file."""
    undo, lines = store.undo(plan, force=force)
    if undo.files:
        lines.append(
            f"The replaced versions are kept as checkpoint {undo.number}: "
            f"%agent undo {undo.number} brings them back. The model is told on its next prompt."
        )
    if plan.needs_force and not force:
        lines.append("Changed files were left as they are (--force restores them too).")
    return notice_display(undo_summary(lines), level="info" if undo.files else "warning")


async def _ask(front_end: FrontEnd, yes_label: str, no_label: str, host: AgentHost) -> str:
    """Buttons in the running cell; "yes", "no", "headless" or "timeout"."""
    if not front_end.can_show_widgets():
        return "headless"
    widgets = ipywidgets()
    answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
    owner = message_session()

    def resolve(value: Answer) -> None:
        if not answer.done() and from_owner(owner):
            answer.set_result(value)

    yes_button = _button(yes_label, style="warning")
    no_button = _button(no_label)
    yes_button.on_click(lambda _b: resolve("yes"))  # pyright: ignore[reportUnknownLambdaType]
    no_button.on_click(lambda _b: resolve("no"))  # pyright: ignore[reportUnknownLambdaType]
    buttons = [yes_button, no_button]
    box = widgets.VBox(
        [widgets.HTML(value=widget_html(esc(f"{yes_label}?"))), widgets.HBox(buttons)],
        _view_count=0,  # a front end that renders it reports it (see `frontend`)
    )

    outcome, decided = await show_and_wait(
        front_end,
        box,
        answer,
        limit=host.approver().timeout,
        buttons=buttons,
        interrupted="Undo cancelled (interrupted): nothing was restored.",
        emit=host._emit_line,  # pyright: ignore[reportPrivateUsage]
    )
    return decided if outcome == "answered" and decided is not None else outcome


def _second_question(plan: UndoPlan) -> str:
    """Why some files need a second confirmation, one line each."""
    lines = [f"{f.record.shown}: {f.changed}" for f in plan.files if f.changed and not f.blocked]
    return "Restore these too? They would be overwritten:\n" + "\n".join(lines)


def _unconfirmed(answer: str, number: int, flag: str) -> str:
    match answer:
        case "headless":
            return (
                "Nobody could confirm the undo here (no front end shows buttons): nothing was "
                f"restored. %agent undo {number} {flag} confirms it in the line."
            )
        case "timeout":
            return "No answer in time: nothing was restored."
        case _:
            return "Cancelled: nothing was restored."


def _number(argument: str | None) -> int | None:
    if not argument:
        return None
    try:
        return int(argument)
    except ValueError:
        raise UsageError(f"%agent undo takes a checkpoint number, not {argument!r}.") from None


# ── the footer's button ────────────────────────────────────────────────────────────────

FOOTER_LABEL = "Undo this cell's changes"


def show_cell_checkpoint(host: AgentHost, session: Any, view: Any) -> None:
    """At a cell's end: say which files were not checkpointed, and, when a widget front end
    is known to be there, offer **Undo this cell's changes** below the footer (never in
    nbclient or nbval, whose recorded outputs stay as they were)."""
    store: CheckpointStore | None = getattr(session, "checkpoints", None)
    if store is None:
        return
    for text in store.take_notices():
        view.notice(text, level="warning")
    checkpoint = store.current
    front_end = host.approver().front_end
    if checkpoint is None or not checkpoint.files or not front_end.known():
        return
    if not front_end.can_show_widgets():
        return

    display(widget_bundle(FooterUndo(host, store, checkpoint).box))


class FooterUndo:
    """The footer's undo button, a small state machine driven by clicks.

    The cell has finished, so nothing awaits here: each click moves one step (show the diff
    and ask; ask again for changed files; restore) and writes only into the widget's own
    output area (a widget state update, shown under this cell whatever message the click
    came with), never to the kernel's streams.
    """

    def __init__(self, host: AgentHost, store: CheckpointStore, checkpoint: Checkpoint) -> None:
        widgets = ipywidgets()
        self.store, self.checkpoint = store, checkpoint
        self.plan: UndoPlan | None = None
        self.button = _button(FOOTER_LABEL, icon="undo")
        self.output = widgets.Output()
        self.row = widgets.HBox([])
        self.box = widgets.VBox(
            [self.button, self.output, self.row],
            layout=widgets.Layout(align_items="flex-start"),
            _view_count=0,
        )
        self.button.on_click(lambda _b: self._guarded(self._start))  # pyright: ignore[reportUnknownLambdaType]

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except Exception as exc:  # shown where the person clicked, never lost in a log
            self._ask_nothing()
            self._show(notice_display(f"Undo failed: {type(exc).__name__}: {exc}", level="error"))

    def _start(self) -> None:
        self.button.disabled = True
        if self.checkpoint.undone_by is not None:
            number = self.checkpoint.undone_by
            self._show(notice_display(f"Already undone; %agent undo {number} redoes it."))
            return
        self.plan = self.store.plan_undo(self.checkpoint)
        self._show(diff_display(self.plan))
        self._ask(UNDO_LABEL, self._confirmed, CANCEL_LABEL, self._cancelled)

    def _confirmed(self) -> None:
        plan = self.plan
        assert plan is not None
        if not plan.needs_force:
            self._restore(force=False)
            return
        self._show(notice_display(_second_question(plan), level="warning"))
        self._ask(
            FORCE_LABEL,
            lambda: self._restore(force=True),
            SKIP_LABEL,
            lambda: self._restore(force=False),
        )

    def _cancelled(self) -> None:
        self._ask_nothing()
        self._show(notice_display("Cancelled: nothing was restored."))
        self.button.disabled = False

    def _restore(self, *, force: bool) -> None:
        assert self.plan is not None
        self._ask_nothing()
        self._show(_restore(self.store, self.plan, force=force))

    def _ask(
        self, yes: str, on_yes: Callable[[], None], no: str, on_no: Callable[[], None]
    ) -> None:
        yes_button = _button(yes, style="warning")
        no_button = _button(no)
        yes_button.on_click(lambda _b: self._guarded(on_yes))  # pyright: ignore[reportUnknownLambdaType]
        no_button.on_click(lambda _b: self._guarded(on_no))  # pyright: ignore[reportUnknownLambdaType]
        self._ask_nothing()
        self.row.children = (yes_button, no_button)

    def _ask_nothing(self) -> None:
        for old in self.row.children:
            old.close()
        self.row.children = ()

    def _show(self, shown: Rendered) -> None:
        # HTML and text only: an Output widget renders the JSON payload as raw JSON.
        kept = {k: v for k, v in shown.data.items() if k in ("text/html", "text/plain")}
        self.output.append_display_data(Rendered(kept))


def _button(description: str, *, style: str = "", icon: str = "") -> Any:
    widgets = ipywidgets()
    return widgets.Button(
        description=description,
        button_style=style,
        icon=icon,
        layout=widgets.Layout(width="auto"),
    )
