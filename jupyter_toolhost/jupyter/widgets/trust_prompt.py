"""The folder trust question, asked in the cell before a conversation's first prompt.

A folder whose own settings would run commands or allow more (see
`permissions.settings.trust`) is asked about once: the cell lists each hook command, each MCP
server's command, the mode and the allow rules, with two buttons, "Trust this folder" and
"Don't trust". It is shown and waited for as the approval prompt is (`widget_prompt`): the
click resolves a future in the awaiting cell, only from the client whose cell asked. With no
front end that shows widgets (nbclient, papermill, nbval, `jupyter console`) nobody can
answer, so the folder stays untrusted; ``%%agent --trust-folder`` or ``trustedFolders`` in
``~/.toolhost/settings.json`` trusts it there. A line recording the answer stays in the cell.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import Literal, TypeAlias

from ...permissions.settings.trust import FolderTrust, describe
from ..views.render import ERROR, FG2, home_path
from ..views.safe_html import widget_html
from .approval import from_owner, message_session
from .frontend import FrontEnd
from .widget_prompt import filled_button, ipywidgets, show_and_wait

TRUST_LABEL = "Trust this folder"
DECLINE_LABEL = "Don't trust"
Answer: TypeAlias = Literal["trust", "decline", "headless", "timeout"]


def question_html(trust: FolderTrust) -> str:
    """The question: the folder, what its settings would do (new lines marked), the choice."""
    again = bool(trust.new) and trust.new != trust.actions
    heading = (
        "This folder's settings changed since you trusted it"
        if again
        else "Do you trust the files in this folder?"
    )
    items = "".join(
        f"<li><code>{html.escape(line)}</code></li>" for line in describe(trust.actions, trust.new)
    )
    return (
        f"<b>{html.escape(heading)}</b> <code>{html.escape(home_path(str(trust.folder)))}</code>"
        f"<div style='color:{FG2}'>Its settings would, before anything is sent to the model:</div>"
        f"<ul style='margin:2px 0'>{items}</ul>"
        f"<div style='color:{ERROR}'>Trust it only if you trust where its files come from: "
        "hooks and MCP servers run with your rights.</div>"
        f"<div style='color:{FG2}'>{html.escape(DECLINE_LABEL)}: the conversation runs with "
        "only the folder's deny and ask rules.</div>"
    )


def record_line(trust: FolderTrust, answer: Answer, note: str = "") -> str:
    """The line that stays in the cell after the question."""
    if answer == "trust":
        return (
            f"Trusted the folder {home_path(str(trust.folder))}: its settings apply {note}".rstrip()
        )
    why = {
        "decline": "(by you)",
        "headless": "(no front end to ask; %%agent --trust-folder trusts it)",
        "timeout": "(no answer in time)",
    }.get(answer, "")
    return held_back_line(trust, why)


def held_back_line(trust: FolderTrust, why: str) -> str:
    """What an untrusted folder's settings do not do in this conversation."""
    return (
        f"Not trusted: the folder {home_path(str(trust.folder))} {why}. Held back (only its "
        "deny and ask rules apply): " + "; ".join(trust.actions)
    )


async def ask_trust(
    trust: FolderTrust,
    *,
    front_end: FrontEnd,
    limit: float | None,
    emit: Callable[[str], None],
) -> Answer:
    """Ask in the running cell whether to trust `trust.folder`; the answer (a "headless" one
    when no front end can show the question)."""
    if not front_end.can_show_widgets():
        return "headless"
    widgets = ipywidgets()
    answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
    owner = message_session()

    def resolve(value: Answer) -> None:
        if not answer.done() and from_owner(owner):
            answer.set_result(value)

    trust_button = filled_button(TRUST_LABEL, "trust")
    decline_button = widgets.Button(description=DECLINE_LABEL, button_style="")
    trust_button.on_click(lambda _b: resolve("trust"))  # pyright: ignore[reportUnknownLambdaType]
    decline_button.on_click(lambda _b: resolve("decline"))  # pyright: ignore[reportUnknownLambdaType]
    buttons = [trust_button, decline_button]
    box = widgets.VBox(
        [widgets.HTML(value=widget_html(question_html(trust))), widgets.HBox(buttons)],
        layout=widgets.Layout(border="1px solid #d9534f", padding="4px", margin="4px 0"),
        _view_count=0,  # a front end that renders the question reports it (see `frontend`)
    )

    outcome, decided = await show_and_wait(
        front_end,
        box,
        answer,
        limit=limit,
        buttons=buttons,
        interrupted=f"Folder trust question closed (interrupted): {home_path(str(trust.folder))}",
        emit=emit,
    )
    if outcome == "answered" and decided is not None:
        return decided
    return "timeout" if outcome == "timeout" else "headless"
