"""Approval prompts in the cell: an ipywidgets `Approver` with Allow / Always allow / Deny.

The cell that runs the agent is an awaiting async cell; ipykernel (>= 7.4) dispatches widget
comm messages while it waits, so a click resolves a future here. Callbacks only resolve that
future: anything printed inside a callback would be attributed to the click message, not to
the cell, so the waiting coroutine (which runs in the cell's context) writes the record
("Allowed Bash: ls -la (once)") and disables the widgets.

One click decides, from the client whose cell asked (`from_owner`). Beside the buttons an
optional reason box: what is typed there goes to the model with Deny, and Enter in the box
denies with it. "Always allow" says which rules it adds for this session; a checkbox beside
it also saves them to `.toolhost/settings.local.json`. A call asked for safety (a protected
folder, a tree that holds a denied path...) gets no rule and no checkbox: "Always allow"
allows it once.

With no front end that shows widgets (nbclient, papermill, nbconvert, jupyter console,
plain IPython) nobody clicks: the prompt is denied at once with a message that says how to
run unattended (see `frontend`). An explicit timeout makes every prompt wait that long
instead. ipywidgets is imported when the first prompt is built, never at `%load_ext`.

A plan presented for approval (an ask that carries a `plan`, ExitPlanMode's) is shown as
rendered Markdown under the heading "Approve this plan?", with the same buttons. The plan is
the model's text: it is rendered and cleaned by `safe_html.markdown_html`, and the whole
header passes `safe_html.widget_html`, as every widget's markup does.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, assert_never

from IPython import get_ipython

from ...core.numbers import format_number
from ...permissions.api import (
    DESTRUCTIVE_WARNING,
    ApprovalChoice,
    ApprovalDecision,
    ApprovalRequest,
)
from ..views.render import ERROR, FG2
from ..views.safe_html import markdown_html, widget_html
from .comm_ack import TypingWatch
from .frontend import FrontEnd, headless_message
from .widget_prompt import DECIDED as DECIDED
from .widget_prompt import Fill, filled_button, ipywidgets, show_and_wait
from .widget_prompt import widget_bundle as widget_bundle

BUTTON_LABELS: dict[ApprovalChoice, str] = {
    "allow": "Allow once",
    "cell": "Allow for this cell",
    "always": "Always allow",
    "deny": "Deny",
}
EDIT_LABEL = "Edit"
EDITED_LABEL = "Allow as edited"
CANCEL_EDIT_LABEL = "Cancel edit"
ACCESS_KEYS: dict[str, str] = {"allow": "o", "cell": "c", "always": "a", "deny": "d", "edit": "e"}
"""Each button's access key, Alt+key while the focus is in the prompt: the lab extension
gives them from the buttons' ``toolhost-choice-*`` classes, and makes Enter allow once and
Escape deny there too."""
PROMPT_CLASS = "toolhost-approval"
FEEDBACK_PLACEHOLDER = "reason for Deny, optional (Enter denies)"
"""Short enough to show whole in its box (at least `REASON_WIDTH`) on a 1024 px screen with
JupyterLab's file browser open; the box's tooltip says the rest (`FEEDBACK_TOOLTIP`)."""
FEEDBACK_TOOLTIP = "What you type here is sent to the model with Deny; Enter in the box denies."
REASON_WIDTH = "22em"
SAVE_LABEL = "and save to .toolhost/settings.local.json"
ONCE_NOTE = "This call is asked for safety: Always allow allows it once and adds no rule."
TIMEOUT_ENV = "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"
_FOLD_CHARS = 300
_FOLD_LINES = 8
PLAN_HEADING = "Approve this plan?"
PLAN_HINT = (
    "Allow leaves plan mode and lets the model start on it; Deny keeps plan mode and "
    "sends your feedback."
)


def approval_timeout_from_env() -> float | None:
    """`JUPYTER_TOOLHOST_APPROVAL_TIMEOUT` in seconds, or None (wait for a click)."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def record_text(request: ApprovalRequest, decision: ApprovalDecision, *, note: str = "") -> str:
    """The plain line that stays in the output after a decision."""
    what = f"{request.display_name}: {request.summary}" if request.summary else request.display_name
    match decision.choice:
        case "allow" if decision.edited_input is not None:
            text = f"Allowed {what} (once, as you edited it)"
        case "allow":
            text = f"Allowed {what} (once)"
        case "cell" if guarded(request):
            text = f"Allowed {what} (once: asked for safety, no rule added)"
        case "cell":
            rules = ", ".join(always_rules(request))
            text = f"Allowed {what} (for this cell: {rules})"
        case "always" if guarded(request):
            text = f"Allowed {what} (once: asked for safety, no rule added)"
        case "always":
            rules = ", ".join(always_rules(request))
            where = "saved to .toolhost/settings.local.json" if decision.save else "this session"
            text = f"Allowed {what} (always: {rules}, {where})"
        case "deny":
            text = f"Denied {what}"
            if decision.feedback:
                text += f" — {decision.feedback}"
        case _:
            assert_never(decision.choice)
    return f"{text} {note}".rstrip()


def timeout_decision(request: ApprovalRequest, timeout: float) -> ApprovalDecision:
    """The deny a headless run gets when nobody answers."""
    return ApprovalDecision(
        "deny",
        feedback=(
            f"No one answered the approval prompt for {request.display_name} within "
            f"{timeout:g} s (no front end?). For unattended runs use permission mode "
            "'dontAsk' with allow rules, e.g. %%agent --mode dontAsk."
        ),
    )


def headless_decision(request: ApprovalRequest) -> ApprovalDecision:
    """The deny a prompt gets at once when no front end can show it."""
    return ApprovalDecision("deny", feedback=headless_message(request.display_name))


def guarded(request: ApprovalRequest) -> bool:
    """Asked for safety (a guard, see `permissions.guards`): no rule may waive it."""
    return request.reason is not None and request.reason.kind == "safety"


def always_rules(request: ApprovalRequest) -> tuple[str, ...]:
    """The rules "Always allow" adds (as the permission engine does)."""
    return request.suggested_rules or (request.tool_name,)


def input_html(values: Mapping[str, Any]) -> str:
    """The call's input, pretty: one row per field, long values folded."""
    rows = []
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
        escaped = html.escape(text)
        if len(text) > _FOLD_CHARS or text.count("\n") >= _FOLD_LINES:
            # All of it, in a box that scrolls: nothing is decided on a part of the input.
            cell = (
                f"<div style='color:{FG2}'>{format_number(len(text))} characters, "
                f"{format_number(text.count(chr(10)) + 1)} lines (all shown; scroll)</div>"
                f"<pre style='margin:0;white-space:pre-wrap;max-height:24em;overflow:auto'>"
                f"{escaped}</pre>"
            )
        else:
            cell = f"<pre style='margin:0;white-space:pre-wrap'>{escaped}</pre>"
        rows.append(
            f"<tr><td style='vertical-align:top;text-align:left'><b>{html.escape(key)}</b></td>"
            f"<td style='text-align:left'>{cell}</td></tr>"
        )
    return f"<table>{''.join(rows)}</table>"


def plan_of(request: ApprovalRequest) -> str | None:
    """The plan in an ask that presents one for approval, else None."""
    return request.plan


def plan_html(plan: str) -> str:
    """The header of a plan approval: the heading, what the buttons do, the plan rendered."""
    return (
        f"<h3 style='margin:2px 0'>{html.escape(PLAN_HEADING)}</h3>"
        f"<div style='color:{FG2}'>{html.escape(PLAN_HINT)}</div>"
        "<div style='border-left:3px solid #e0a800;padding:0 8px;margin:4px 0'>"
        f"{markdown_html(plan)}</div>"
    )


def reason_beside(request: ApprovalRequest) -> str:
    """The reason to show after the prompt's message: '' when the message already says it
    ("Edit needs approval: it writes notes.md" needs no "(it writes notes.md)")."""
    if request.reason is None:
        return ""
    detail, full = request.reason.detail, str(request.reason)
    if detail and detail in request.message:
        return (
            request.reason.source
            if request.reason.source and request.reason.source not in request.message
            else ""
        )
    return full


def prompt_html(request: ApprovalRequest) -> str:
    """The header of an approval prompt: who asks, what, and why (a plan: the plan)."""
    plan = plan_of(request)
    if plan is not None:
        return plan_html(plan)
    reason = reason_beside(request)
    lines = [
        f"<b>{html.escape(request.display_name)}</b> wants to run "
        f"<code>{html.escape(request.summary)}</code>",
        f"<div style='color:{FG2}'>{html.escape(request.message)}"
        + (f" <i>({html.escape(reason)})</i>" if reason else "")
        + "</div>",
        input_html(request.input),
    ]
    if request.destructive:
        lines.append(f"<div style='color:{ERROR}'>⚠ {html.escape(DESTRUCTIVE_WARNING)}</div>")
    if guarded(request):
        lines.append(f"<div style='color:{ERROR}'>{html.escape(ONCE_NOTE)}</div>")
    else:
        rules = ", ".join(f"<code>{html.escape(r)}</code>" for r in always_rules(request))
        lines.append(
            f"<div style='color:{FG2}'>Allow for this cell allows {rules} until this cell "
            f"ends; Always allow adds {rules} for this session (tick the box to save it to "
            "<code>.toolhost/settings.local.json</code> too)</div>"
        )
    if request.agent_id:
        lines.append(
            f"<div style='color:{FG2}'>asked by sub-agent {html.escape(request.agent_id)}</div>"
        )
    return "".join(lines)


@dataclass
class _Prompt:
    """The widgets of one pending prompt."""

    box: Any
    controls: list[Any]
    reason: Any
    typing: TypingWatch

    async def settle(self, decision: ApprovalDecision) -> ApprovalDecision:
        """A deny takes the reason box's text once the box is quiet (see `comm_ack`)."""
        if decision.choice != "deny":
            return decision
        await self.typing.settled()
        text = str(self.reason.value or "").strip()
        return replace(decision, feedback=text or None)


class WidgetApprover:
    """An `Approver` that shows buttons in the running cell and waits for a click.

    `timeout` (seconds) ends an unanswered prompt with a deny, wherever it runs; None waits
    for a click when a front end shows the prompt and denies at once when none can (see
    `frontend`). `emit` writes the record line (defaults to `print`, i.e. the cell's stdout).
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
        self.decisions: list[tuple[ApprovalRequest, ApprovalDecision]] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Show a prompt for `request` and wait for its decision."""
        if not self.front_end.can_show_widgets():
            return self._record(request, headless_decision(request), "(no front end to ask)")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[ApprovalDecision] = loop.create_future()
        prompt = _build_prompt(request, answer)
        outcome, decision = await show_and_wait(
            self.front_end,
            prompt.box,
            answer,
            limit=self.timeout,
            settle=lambda: prompt.settle(answer.result()),
            close=lambda: _close(prompt),
            interrupted=(
                f"Approval prompt closed (interrupted): {request.display_name}: {request.summary}"
            ),
            emit=self.emit,
        )
        match outcome:
            case "answered":
                assert decision is not None
                return self._record(request, decision, "(by you)")
            case "timeout":
                decision = timeout_decision(request, self.timeout or 0)
                return self._record(
                    request,
                    decision,
                    f"(no answer within {format_number(self.timeout or 0, 'seconds')})",
                )
            case "headless":
                return self._record(request, headless_decision(request), "(no front end showed it)")
            case _:
                assert_never(outcome)

    def _record(
        self, request: ApprovalRequest, decision: ApprovalDecision, note: str = ""
    ) -> ApprovalDecision:
        self.decisions.append((request, decision))
        self.emit(record_text(request, decision, note=note))
        return decision


def _build_prompt(request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> _Prompt:
    widgets = ipywidgets()
    owner = message_session()  # the client whose cell asks (its execute_request)

    def resolve(decision: ApprovalDecision) -> None:
        if not answer.done() and from_owner(owner):
            answer.set_result(decision)

    plan = plan_of(request) is not None
    shown: dict[ApprovalChoice, str] = {
        choice: label
        for choice, label in BUTTON_LABELS.items()
        if choice != "cell" or not (plan or guarded(request))  # no rule to hold for a cell
    }
    buttons = {
        choice: _keyed(
            filled_button(label, _FILL[choice], tooltip=_tooltip(label, choice, request)), choice
        )
        for choice, label in shown.items()
    }
    # It takes the rest of the buttons' row, and a row of its own when less is left.
    reason = widgets.Text(
        placeholder=FEEDBACK_PLACEHOLDER,
        tooltip=FEEDBACK_TOOLTIP,
        layout=widgets.Layout(width="auto", flex=f"1 1 {REASON_WIDTH}", min_width=REASON_WIDTH),
    )
    savable = not guarded(request)
    save = widgets.Checkbox(value=False, description=SAVE_LABEL, indent=False) if savable else None

    def deny_with_reason() -> None:
        resolve(ApprovalDecision("deny"))  # the reason is read when the box is quiet

    def on_allow(_button: Any) -> None:
        resolve(ApprovalDecision("allow"))

    def on_cell(_button: Any) -> None:
        resolve(ApprovalDecision("cell"))

    def on_always(_button: Any) -> None:
        resolve(ApprovalDecision("always", save=save is not None and bool(save.value)))

    def on_deny(_button: Any) -> None:
        deny_with_reason()

    def on_reason_message(_widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "submit":  # Enter
            deny_with_reason()

    buttons["allow"].on_click(on_allow)
    if "cell" in buttons:
        buttons["cell"].on_click(on_cell)
    buttons["always"].on_click(on_always)
    buttons["deny"].on_click(on_deny)
    reason.on_msg(on_reason_message)
    header = widgets.HTML(value=widget_html(prompt_html(request)))
    row = [*buttons.values()]
    editor = None if plan else _Editor(request, resolve)
    if editor is not None:
        row.append(editor.open)
    row.append(reason)
    if save is not None:
        row.append(save)
    parts = [header, widgets.HBox(row, layout=widgets.Layout(flex_flow="row wrap"))]
    if editor is not None:
        parts.append(editor.panel)
    box = widgets.VBox(
        parts,
        layout=widgets.Layout(border="1px solid #e0a800", padding="4px", margin="4px 0"),
        _view_count=0,  # a front end that renders the prompt reports it (see `frontend`)
    )
    box.add_class(PROMPT_CLASS)
    controls = [*row, *(editor.controls if editor is not None else ())]
    watched = [reason, *(editor.fields.values() if editor is not None else ())]
    return _Prompt(box, controls, reason, TypingWatch(watched))


_FILL: dict[ApprovalChoice, Fill] = {
    "allow": "allow",
    "cell": "allow",
    "always": "always",
    "deny": "deny",
}


def _tooltip(label: str, choice: str, request: ApprovalRequest) -> str:
    return f"{label}: {request.display_name} (Alt+{ACCESS_KEYS[choice].upper()})"


def _keyed(button: Any, choice: str) -> Any:
    """`button` with the class the lab extension gives its access key from."""
    button.add_class(f"toolhost-choice-{choice}")
    return button


class _Editor:
    """Edit: the call's input in text boxes, one per field, to change before allowing it.

    A text field is edited as it is; any other field as JSON. "Allow as edited" sends what
    the boxes hold (a field that is not valid JSON says so and sends nothing); the engine
    checks the edited call against the deny rules and the tool's input model, and the model
    is told what changed."""

    def __init__(
        self, request: ApprovalRequest, resolve: Callable[[ApprovalDecision], None]
    ) -> None:
        widgets = ipywidgets()
        self.request = request
        self.resolve = resolve
        self.open = _keyed(
            filled_button(EDIT_LABEL, "edit", tooltip=_tooltip(EDIT_LABEL, "edit", request)),
            "edit",
        )
        self.fields: dict[str, Any] = {}
        for key, value in request.input.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines = min(max(text.count("\n") + 2, 2), 20)
            self.fields[key] = widgets.Textarea(
                value=text,
                description=key,
                layout=widgets.Layout(width="auto", height=f"{lines * 1.5 + 0.5}em"),
                style={"description_width": "initial"},
            )
        self.allow = filled_button(EDITED_LABEL, "allow", tooltip="Run the call as edited")
        self.allow.add_class("toolhost-choice-edited")
        self.cancel = widgets.Button(description=CANCEL_EDIT_LABEL)
        self.problem = widgets.HTML(value=widget_html(""))
        self.panel = widgets.VBox(
            [*self.fields.values(), widgets.HBox([self.allow, self.cancel]), self.problem],
            layout=widgets.Layout(display="none"),
        )
        self.controls = [*self.fields.values(), self.allow, self.cancel]
        self.open.on_click(lambda _b: self.show(True))
        self.cancel.on_click(lambda _b: self.show(False))
        self.allow.on_click(lambda _b: self.submit())

    def show(self, visible: bool) -> None:
        self.panel.layout.display = "flex" if visible else "none"

    def submit(self) -> None:
        edited: dict[str, Any] = {}
        for key, box in self.fields.items():
            text = str(box.value)
            if isinstance(self.request.input.get(key), str):
                edited[key] = text
                continue
            try:
                edited[key] = json.loads(text)
            except ValueError as exc:
                self.problem.value = widget_html(
                    f"<span style='color:{ERROR}'>{html.escape(key)} is not valid JSON "
                    f"({html.escape(str(exc))}); nothing was sent.</span>"
                )
                return
        if edited == dict(self.request.input):
            self.resolve(ApprovalDecision("allow"))  # nothing changed: allowed once
            return
        self.resolve(ApprovalDecision("allow", edited_input=edited))


def message_session() -> str | None:
    """The ``session`` of the message the kernel is handling now (its header names the
    client that sent it), or None outside a kernel."""
    try:
        kernel = getattr(get_ipython(), "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:
        return None
    header = parent.get("header") if isinstance(parent, dict) else None
    session = header.get("session") if isinstance(header, dict) else None
    return session if isinstance(session, str) and session else None


def from_owner(owner: str | None) -> bool:
    """Whether the click being handled came from the client whose cell asked.

    What can be checked: every message is signed with the kernel's key (ipykernel drops a
    message with a bad signature), and the ``session`` in its header names the client that
    sent it; a front end sends a cell's execute_request and its widgets' clicks on one
    connection, so they share it. What can't: anyone holding the connection file's key can
    sign a message and copy a session id seen on the broadcast channel, so this stops a
    second client (another connection, a script that connects on its own), not one that
    imitates the front end. Keeping the key out of reach is the sandbox's job: the Jupyter
    runtime folder is hidden there and the network is not shared. A page reloaded while a
    prompt waits is a new client: answer such a prompt by interrupting the cell.
    """
    if owner is None:
        return True
    return message_session() == owner


def _close(prompt: _Prompt) -> None:
    prompt.typing.close()
    for control in prompt.controls:
        control.disabled = True
