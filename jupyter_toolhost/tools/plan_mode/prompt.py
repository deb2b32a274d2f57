"""What the model is told about EnterPlanMode and ExitPlanMode."""

from __future__ import annotations

ENTER = "EnterPlanMode"
EXIT = "ExitPlanMode"

ENTER_DESCRIPTION = """Switches the session to plan mode, to explore and design before changing
anything.

Use it before a non-trivial change when the approach is not obvious: several files, an
architectural choice, unclear requirements. In plan mode, read and search freely but do not
edit files, run commands that change anything, or commit. When the plan is ready, present
it with ExitPlanMode; the user approves it (and the previous permission mode comes back) or
tells you what to change."""

EXIT_DESCRIPTION = """Presents your plan to the user for approval and, when approved, leaves
plan mode.

Call it only in plan mode, once you have a concrete implementation plan (not for research
questions). `plan` is markdown: the steps, the files to change, how to verify. If the user
rejects it, you stay in plan mode: revise the plan with their feedback and present it
again."""

ENTERED = """Entered plan mode. Focus on exploring the code and designing an approach:
1. Read and search to understand the relevant code and its patterns.
2. Consider the options and their trade-offs; ask the user if something is unclear.
3. Write a concrete plan, then call ExitPlanMode to present it for approval.
Do not write or edit files, or run commands that change anything, until the plan is
approved."""

APPROVED = """The user approved your plan; plan mode is over (permission mode: {mode}). Start
with the first step and keep track of your progress.

The approved plan:
{plan}"""

ASK = "Approve this plan and leave plan mode?\n\n{plan}"
