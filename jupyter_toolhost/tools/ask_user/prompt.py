"""What the model is told about AskUserQuestion."""

from __future__ import annotations

NAME = "AskUserQuestion"

DESCRIPTION = """Asks the user one to four multiple-choice questions and waits for the answers.

Use it when you need the user's preference or a decision you cannot make from the code:
an ambiguous requirement, a choice between approaches, which option to implement. Each
question has a short `header` (at most 12 characters, shown as a chip), the `question`
itself, two to four `options` (each a `label` and a `description` of what it means), and
`multiSelect` when several options may be chosen. The user may always answer in their own
words instead. Put a recommended option first and say so in its label. Where no user is
available (a script, a scheduled run), the call fails: proceed with your best judgement
and state the assumption."""

ANSWERED = (
    "User has answered your questions: {answers}. You can now continue with the user's "
    "answers in mind."
)
NO_USER = (
    "No user is available to answer questions in this session (nothing is attached to ask "
    "them). Continue with your best judgement and state the assumptions you made."
)
