"""04 — Regression testing with nbval: cassettes, dontAsk with rules, sanitizer, conftest."""

from __future__ import annotations

from common import Spec, code, md, sandbox_cell

from jupyter_toolhost.testing import Turn, text, tool_use

CASSETTE = "../cassettes/04-regression-testing-with-nbval.json"
COMMAND = (
    "pytest --nbval --nbval-current-env "
    "--nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks/"
)

CELLS = [
    md(
        f"""
        # Regression testing with nbval

        [nbval](https://github.com/computationalmodelling/nbval) runs a notebook and
        compares every cell's new output with the output saved in the file. Notebooks with
        `%%agent` cells can be tests too, if three things hold:

        1. **The model's side is recorded.** A `--cassette FILE` option replays the model's
           answers from `FILE` (or records them there, when the file does not exist and an
           API key is set). The tools still run for real.
        2. **Nobody has to click.** No front end, no buttons: use permission mode `dontAsk`
           (every call that would ask is denied at once, and the model is told why) plus
           allow rules for what the notebook needs.
        3. **What varies is kept out of the comparison.** Timings, token counts and costs
           are only in the JSON payload of each display, which `conftest.py` tells nbval
           to skip; absolute paths and session ids are rewritten by `nbval_sanitize.cfg`.

        The notebooks in this folder are tested with:

        ```
        {COMMAND}
        ```
        """
    ),
    sandbox_cell("04"),
    code("%load_ext jupyter_toolhost"),
    md(
        """
        ## `dontAsk`: a denial instead of a prompt

        The model tries to delete a file. No rule allows it, and in `dontAsk` mode that is a
        denial, not a prompt: the cell never waits, and the model gets the reason.
        """
    ),
    code(
        f"""
        %%agent --cassette {CASSETTE} --mode dontAsk
        Clean up: delete scores.csv.
        """
    ),
    code('print(Path("scores.csv").exists())'),
    md(
        """
        ## What a cassette holds

        One interaction per model request: a summary of the request (how many messages,
        the tool names, the newest message, with paths and session ids normalised) and the
        complete response. Tool-use ids are renumbered `toolu_01`, `toolu_02`, ..., so a
        cassette recorded against the real API and one recorded against a scripted server
        look the same.
        """
    ),
    code(
        f"""
        import json

        cassette = json.loads(Path("{CASSETTE}").read_text())
        for number, interaction in enumerate(cassette["interactions"], 1):
            request, response = interaction["request"], interaction["response"]
            blocks = [b["type"] if b["type"] != "tool_use" else f"tool_use {{b['name']}}"
                      for b in response["content"]]
            print(f"#{{number}}: {{request['messages']}} message(s) sent -> {{blocks}}, "
                  f"stop: {{response['stop_reason']}}")
        """
    ),
    md(
        """
        Replay checks each request against the recorded one. When a notebook changes
        (another prompt, a tool that now answers differently), replay stops with a diff
        instead of serving an answer to a question nobody asked:
        """
    ),
    code(
        f"""
        from jupyter_toolhost import Session
        from jupyter_toolhost.model.cassette import CassetteMismatch, CassetteModel

        drifted = Session(model=CassetteModel("{CASSETTE}"), permission_mode="dontAsk", cwd=".")
        try:
            await drifted.run("Clean up: delete every file.")
        except CassetteMismatch as mismatch:
            print(str(mismatch).splitlines()[0])
        """
    ),
    md(
        """
        ## The settings this project ships for nbval

        `nbval_sanitize.cfg` (passed with `--nbval-sanitize-with`) rewrites what differs
        between machines and runs inside compared text:
        """
    ),
    code('print((HERE / "nbval_sanitize.cfg").read_text())'),
    md(
        """
        `conftest.py` beside the notebooks does the rest:

        - it removes `ANTHROPIC_*` and `JUPYTER_TOOLHOST_*` variables, so kernels run
          offline from their cassettes whatever the environment holds;
        - it points `HOME` at an empty directory, so no `~/.toolhost/settings.json` (rules,
          modes, hooks) or IPython profile of yours changes a decision or an output;
        - it sets `JUPYTER_TOOLHOST_APPROVAL_TIMEOUT=5`, so a prompt a notebook forgot to
          allow fails the test after 5 s instead of hanging it;
        - it adds `application/vnd.jupyter.toolhost.v1+json` to what nbval does not
          compare (nbval compares JSON payloads unsanitized, and this one carries timings
          for the JupyterLab renderer); its `text/plain` and `text/html` twins are compared.

        ## Recording a cassette

        - **From the real API**: delete the cassette file, set `ANTHROPIC_API_KEY`, run the
          notebook once (the first `%%agent` cell with `--cassette` records), and save it.
        - **From a script**, like the notebooks here: `python notebooks/regenerate` plays the
          model with scripted turns on a loopback server that speaks the Messages API
          (`jupyter_toolhost.testing.MessagesServer`), records each cassette through the real
          `anthropic` client, runs each notebook offline and saves its outputs.

        Either way, commit the cassette with the notebook, then run nbval twice: the second
        run proves nothing depends on the first.
        """
    ),
]

TURNS = [
    Turn([tool_use("Bash", {"command": "rm scores.csv", "description": "Delete scores.csv"})]),
    Turn(
        [
            text(
                "I was not allowed to delete scores.csv: this session runs in dontAsk mode "
                "and no rule allows `rm`. Add an allow rule if you want me to."
            )
        ]
    ),
]

SPEC = Spec("04-regression-testing-with-nbval", CELLS, TURNS)
