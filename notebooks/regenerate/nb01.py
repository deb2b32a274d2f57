"""01 — Quick start: load the extension, ask about files, approve an edit, a persisted result."""

from __future__ import annotations

from common import INTERRUPT, Branch, Spec, code, md, sandbox_cell

from jupyter_toolhost.testing import Turn, text, tool_use

CASSETTE = "../cassettes/01-quick-start.json"
ALLOW_EDIT_CELL = "%agent allow Edit(notes.md)"

CELLS = [
    md(
        """
        # Quick start: an agent whose tools run in this kernel

        This notebook loads the extension, asks the agent about the files in a small folder,
        approves an edit, and looks at a result too big to send back whole.

        **It runs offline.** Every `%%agent` cell replays answers from the cassette
        `cassettes/01-quick-start.json`: scripted answers stand in for the model (the
        cassette says so), and the tools (file reads, the edit, the shell command) really
        run, here, in this kernel. The cassette holds three paths for the edit below: the one
        an allow rule permits, and, with that rule deleted, the one where you click **Deny**
        and the one where you stop the cell while it asks. To
        talk to the real model instead, set `ANTHROPIC_API_KEY` in the kernel's environment
        and delete `--cassette ...` from the first `%%agent` line (the answers will then
        differ from the saved ones).
        """
    ),
    sandbox_cell("01"),
    md(
        """
        Loading the extension registers `%%agent` (a cell whose body is the prompt) and
        `%agent` (one-line commands: `%agent help` lists them). It imports nothing heavy:
        the model client loads with the first `%%agent` cell.
        """
    ),
    code("%load_ext jupyter_toolhost"),
    md(
        """
        ## Ask about the files

        The agent lists the folder, then reads the three files at once: read-only calls
        are safe to run concurrently, so they form one batch. Reading inside the working
        directory (and read-only shell commands such as `ls`) needs no approval.
        """
    ),
    code(
        f"""
        %%agent --cassette {CASSETTE}
        What is in this folder? One line per file.
        """
    ),
    md(
        """
        ## Approve an edit

        An edit changes a file, so it needs approval. In JupyterLab the cell would show
        **Allow**, **Always allow** and **Deny** buttons and wait for your click, and a line
        recording your decision would stay in the output.

        A notebook that must also run unattended (Run All, nbval, CI: nobody clicks there)
        approves ahead of time with an allow rule instead. The rule uses Claude Code's
        syntax: `Edit(notes.md)` allows edits to that one file, nothing else.
        """
    ),
    code(ALLOW_EDIT_CELL),
    code(
        """
        %%agent
        Fix the typo in notes.md.
        """
    ),
    md("The edit really happened, in this kernel's working directory:"),
    code('print(Path("notes.md").read_text())'),
    md(
        """
        ## A result too big to send back

        Nothing a tool produces is thrown away. When a result is bigger than the tool's
        budget (30,000 characters for the shell), it is saved to a file and the model gets
        its path and a 2,000-byte preview instead. The card below shows the same preview.
        """
    ),
    code("%agent allow Bash(seq:*)"),
    code(
        """
        %%agent
        Print the numbers from 1 to 20000 with seq, then tell me how many lines that was.
        """
    ),
    md("The whole output is on disk, named after the tool call that made it:"),
    code(
        """
        for saved in sorted(Path(".toolhost/sessions").glob("*/tool-results/*.txt")):
            lines = saved.read_text().splitlines()
            size = saved.stat().st_size
            print(f"{saved.name}: {size:,} bytes, {len(lines):,} lines, the last one: {lines[-1]}")
        """
    ),
    md(
        """
        ## Next

        - `02-tool-calling-explained.ipynb`: the machinery, step by step (for teaching).
        - `03-data-science.ipynb`: the agent working with your DataFrames and plots.
        - `04-regression-testing-with-nbval.ipynb`: keeping notebooks like this one as tests.
        """
    ),
]

TURNS = [
    Turn(
        [
            text("Let me list the folder."),
            tool_use("Bash", {"command": "ls", "description": "List the folder"}),
        ]
    ),
    Turn(
        [
            text("Now the three files, all at once."),
            tool_use("Read", {"file_path": "notes.md"}),
            tool_use("Read", {"file_path": "scores.csv"}),
            tool_use("Read", {"file_path": "grades.py"}),
        ]
    ),
    Turn(
        [
            text(
                '- notes.md: field notes on a quiz three classes took (with a typo: "Teh").\n'
                "- scores.csv: quiz scores of 10 students in classes A, B and C.\n"
                "- grades.py: letter(score) turns a score into a letter grade."
            )
        ]
    ),
    Turn(
        [
            text('Replacing "Teh" with "The".'),
            tool_use(
                "Edit",
                {"file_path": "notes.md", "old_string": "Teh scores", "new_string": "The scores"},
            ),
        ]
    ),
    Turn([text('Fixed: notes.md now says "The scores are in scores.csv".')]),
    Turn(
        [
            tool_use(
                "Bash", {"command": "seq 1 20000", "description": "Print the numbers 1 to 20000"}
            )
        ]
    ),
    Turn(
        [
            text(
                "It printed 20,000 lines, one number each. The output was too long to come "
                "back whole, so it was saved to a file and I saw a preview of its start."
            )
        ]
    ),
]

DENY_BRANCH = Branch(
    name="deny",
    skip=(ALLOW_EDIT_CELL,),
    clicks=("Deny",),
    turns=(
        Turn(
            [
                text(
                    "Understood: I left notes.md as it is. The typo is on its first line "
                    '("Teh scores"), if you want to fix it yourself.'
                )
            ]
        ),
        *TURNS[-2:],  # the later cell, now on this branch's conversation: the same answers
    ),
)
"""Without the allow rule, a person who clicks Deny on the edit gets this answer, and the
cells after it replay too."""

INTERRUPTED_BRANCH = Branch(
    name="interrupted",
    skip=(ALLOW_EDIT_CELL,),
    clicks=(INTERRUPT,),
    turns=tuple(TURNS[-2:]),
)
"""Without the allow rule, a person who stops the cell while the edit's prompt waits can
still run the cells after it: their answers are recorded on that branch too."""

SPEC = Spec("01-quick-start", CELLS, TURNS, branches=(DENY_BRANCH, INTERRUPTED_BRANCH))
