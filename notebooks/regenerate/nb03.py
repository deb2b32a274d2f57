"""03 — Data science: a CSV, a DataFrame, an agent that inspects, computes and plots."""

from __future__ import annotations

from common import Spec, code, md, sandbox_cell

from jupyter_toolhost.testing import Turn, text, tool_use

CASSETTE = "../cassettes/03-data-science.json"

GROUP = """by_class = scores.groupby("class")["score"].agg(["count", "mean", "min", "max"]).round(1)
by_class"""
PLOT = """ax = by_class["mean"].plot.bar(title="Mean quiz score per class", ylabel="score", rot=0)
fig = ax.figure
fig.tight_layout()"""

CELLS = [
    md(
        """
        # Data science: the agent works in your kernel

        The agent's tools include three that reach into this kernel: `ListVariables`,
        `InspectVariable` (both read-only) and `PythonExec`, which runs code in the
        notebook's own namespace, so what it makes stays there for you.

        Offline from `cassettes/03-data-science.json` (scripted answers stand in for the
        model); see `01-quick-start.ipynb` for
        running it live.
        """
    ),
    sandbox_cell("03"),
    code(
        """
        import pandas as pd

        scores = pd.read_csv("scores.csv")
        scores.head(3)
        """
    ),
    code("%load_ext jupyter_toolhost"),
    md(
        """
        ## The agent looks at your variables

        Listing and inspecting variables only reads them, so it needs no approval.
        """
    ),
    code(
        f"""
        %%agent --cassette {CASSETTE}
        What data do I have loaded? Describe the DataFrame.
        """
    ),
    md(
        """
        ## The agent runs pandas in the kernel

        `PythonExec` runs code in your namespace, so it asks first. This notebook approves it
        with a rule, so it also runs unattended; in JupyterLab you could click **Allow** on
        each call instead.

        Each call's card shows the code it ran, whole (in JupyterLab, **Insert as cell
        below** turns it into a cell of your own), and what the code displayed (the table,
        the chart) appears right under that card. The model gets the chart too, as an image
        in the tool result, so it can look at what it drew.
        """
    ),
    code("%agent allow PythonExec"),
    code(
        """
        %%agent
        Compute count, mean, min and max of the score per class into a DataFrame called
        by_class, then plot the means as a bar chart and keep the figure as fig.
        """
    ),
    md("What the agent made is in your namespace, as if you had typed it:"),
    code("by_class"),
    code(
        """
        print(type(fig).__name__, [t.get_text() for t in fig.axes[0].get_xticklabels()])
        print(fig.axes[0].get_title())
        """
    ),
]

TURNS = [
    Turn([tool_use("ListVariables", {})]),
    Turn([tool_use("InspectVariable", {"name": "scores"})]),
    Turn(
        [
            text(
                "You have one DataFrame, `scores`: 10 rows, one per student, with the columns "
                "student, class (A, B or C) and score (58 to 94)."
            )
        ]
    ),
    Turn([tool_use("PythonExec", {"code": GROUP})]),
    Turn([tool_use("PythonExec", {"code": PLOT})]),
    Turn(
        [
            text(
                "Done. `by_class` holds the per-class statistics and `fig` the bar chart: "
                "class A has the highest mean (84.7), class C the lowest (71.2)."
            )
        ]
    ),
]

SPEC = Spec("03-data-science", CELLS, TURNS)
