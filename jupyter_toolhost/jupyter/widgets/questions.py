"""AskUserQuestion in the cell: a widget `QuestionAsker` with option buttons and Submit.

Each question shows its header and text, one toggle button per option (one may be chosen,
or several for a multiSelect question), and an "Other" field for an answer in the person's
own words; one Submit button answers them all. Typed answers are read once their boxes
are quiet (see `comm_ack`), and once answered the form's display is emptied like an
approval prompt's (see `approval.DECIDED`): the record line below it stays. As with
approvals, callbacks only resolve a future (or untoggle the other options of a
single-choice question); the waiting coroutine, which runs in the cell's context, writes
the record ("Answered: …") and disables the widgets.

With no front end that shows widgets (see `frontend`) the call fails at once with a message
that says so, and with an explicit approval timeout it fails after that long, so a run
never waits for a person who is not there. ipywidgets is imported when the first question
is shown.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.numbers import format_number
from ...core.types import ToolError
from ..views.render import FG2
from ..views.safe_html import widget_html
from .comm_ack import TypingWatch
from .frontend import FrontEnd
from .widget_prompt import filled_button, ipywidgets, show_and_wait

CHIP = "var(--jp-layout-color2,#e8f0fe)"

if TYPE_CHECKING:
    from ...tools.ask_user import Question

SUBMIT_LABEL = "Submit"
OTHER_PLACEHOLDER = "Other: your own answer"


@dataclass
class _Asked:
    """The widgets of one question."""

    question: Question
    options: list[Any]
    other: Any

    def answer(self) -> str:
        """Chosen labels (", "-joined), then the typed answer; '' when nothing was given."""
        chosen = [o.description for o in self.options if o.value]
        typed = str(self.other.value or "").strip()
        return ", ".join([*chosen, *([typed] if typed else [])])


def record_text(answers: Mapping[str, str], questions: Sequence[Question]) -> str:
    """The plain line that stays in the output once the questions are answered."""
    parts = [f"{q.header}: {answers.get(q.question) or '(no answer)'}" for q in questions]
    return "Answered: " + "; ".join(parts)


def no_front_end_message() -> str:
    """The error the model gets when no front end could show the questions."""
    return (
        "No front end that shows widgets is connected to this kernel (nbclient, papermill, "
        "nbconvert --execute, jupyter console or plain IPython), so no one can answer. "
        "Continue with your best judgement and state the assumptions you made."
    )


def no_answer_message(timeout: float) -> str:
    """The error the model gets when nobody answered in time."""
    return (
        f"No one answered the questions within {format_number(timeout, 'seconds')} (no front "
        "end?). Continue with "
        "your best judgement and state the assumptions you made."
    )


class WidgetQuestionAsker:
    """A `QuestionAsker` that shows the questions in the running cell and waits for Submit.

    `timeout` (seconds) fails an unanswered set of questions; None waits until Submit or an
    interrupt when a front end shows them, and fails at once when none can. `emit` writes
    the record line (defaults to `print`).
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        emit: Callable[[str], None] | None = None,
        front_end: FrontEnd | None = None,
    ) -> None:
        self.timeout = timeout
        self.emit = emit or (lambda text: print(text, flush=True))
        self.front_end = front_end or FrontEnd()

    async def ask_questions(self, questions: Sequence[Question]) -> dict[str, str]:
        """Show `questions` and return the answers keyed by question text."""
        if not self.front_end.can_show_widgets():
            self.emit("Questions not asked (no front end to ask)")
            raise ToolError(no_front_end_message())
        loop = asyncio.get_running_loop()
        submitted: asyncio.Future[None] = loop.create_future()
        box, asked, controls = _build_form(questions, submitted)
        typing = TypingWatch(a.other for a in asked)

        def close() -> None:
            typing.close()
            for control in controls:
                control.disabled = True

        outcome, _ = await show_and_wait(
            self.front_end,
            box,
            submitted,
            limit=self.timeout,
            settle=typing.settled,  # an "Other" answer still on its way lands first
            close=close,
            interrupted="Questions closed (interrupted): " + "; ".join(q.header for q in questions),
            emit=self.emit,
        )
        if outcome == "headless":
            self.emit("Questions not answered (no front end showed them)")
            raise ToolError(no_front_end_message())
        if outcome == "timeout":
            waited = format_number(self.timeout or 0, "seconds")
            self.emit(f"Questions not answered (no answer within {waited})")
            raise ToolError(no_answer_message(self.timeout or 0))
        answers = {a.question.question: a.answer() for a in asked}
        self.emit(record_text(answers, questions))
        return answers


def _build_form(
    questions: Sequence[Question], submitted: asyncio.Future[None]
) -> tuple[Any, list[_Asked], list[Any]]:
    widgets = ipywidgets()
    rows: list[Any] = []
    asked: list[_Asked] = []
    for question in questions:
        options = [
            # As wide as its label: the tool asks the model to write "(Recommended)" in
            # labels, and a button of ipywidgets' fixed width cut it to "Line chart (Reco…".
            widgets.ToggleButton(
                value=False,
                description=option.label,
                tooltip=option.description,
                layout=widgets.Layout(width="auto", min_width="fit-content"),
            )
            for option in question.options
        ]
        if not question.multiSelect:
            _make_exclusive(options)
        other = widgets.Text(placeholder=OTHER_PLACEHOLDER, layout=widgets.Layout(width="60%"))
        asked.append(_Asked(question, options, other))
        rows += [
            widgets.HTML(value=widget_html(_question_html(question))),
            widgets.HBox(options),
            other,
        ]
    submit = filled_button(SUBMIT_LABEL, "submit")

    def on_submit(_button: Any) -> None:
        if not submitted.done():
            submitted.set_result(None)

    submit.on_click(on_submit)
    box = widgets.VBox(
        [*rows, submit],
        layout=widgets.Layout(border="1px solid #1a73e8", padding="4px", margin="4px 0"),
        _view_count=0,  # a front end that renders the form reports it (see `frontend`)
    )
    controls = [*(w for a in asked for w in (*a.options, a.other)), submit]
    return box, asked, controls


def _make_exclusive(options: list[Any]) -> None:
    """Choosing one option of a single-choice question unchooses the others."""

    def chosen(change: Mapping[str, Any]) -> None:
        if change["new"]:
            for other in options:
                if other is not change["owner"] and other.value:
                    other.value = False

    for option in options:
        option.observe(chosen, names="value")


def _question_html(question: Question) -> str:
    kind = "choose any" if question.multiSelect else "choose one"
    descriptions = "".join(
        f"<li><b>{html.escape(o.label)}</b>: {html.escape(o.description)}</li>"
        for o in question.options
    )
    return (
        f"<span style='background:{CHIP};border-radius:8px;padding:0 6px'>"
        f"{html.escape(question.header)}</span> <b>{html.escape(question.question)}</b> "
        f"<span style='color:{FG2}'>({kind}, or write your own)</span>"
        f"<ul style='margin:2px 0;color:{FG2}'>{descriptions}</ul>"
    )
