"""What the model is told about SendMessage."""

from __future__ import annotations

NAME = "SendMessage"

DESCRIPTION = """Sends a message to a subagent: a follow-up to one that finished, or a note to
one that is working.

`to` is the agent's id (from Agent's result) or, inside a team, a teammate's name; "*"
sends to every teammate. An agent that is idle works on the message at once and its reply
is the result of this call. An agent that is working gets the message between two of its
steps, and the call returns at once. `summary` (a few words) is shown to the user."""
