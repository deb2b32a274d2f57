"""04 — Regression testing with nbval: cassettes, dontAsk with rules, the pytest plugin."""

from __future__ import annotations

from common import Spec, code, md, sandbox_cell

from jupyter_toolhost.testing import Turn, text, tool_use

CASSETTE = "../cassettes/04-regression-testing-with-nbval.json"
COMMAND = "pytest --nbval notebooks/"

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
        3. **What varies is kept out of the comparison.** Paths are shown relative to the
           notebook's folder, a replayed session takes its id from the cassette, and with a
           cassette the footer reads the same when it records and when it replays (the
           usage as recorded, or "scripted answers" for scripted ones). What is left (durations, and the JSON payload
           for the JupyterLab renderer) the pytest plugin that comes with the package masks
           or skips, with nothing to copy.

        The notebooks in this folder are tested with nothing but:

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
        Replay finds each answer by what the conversation holds so far, so one cassette can
        hold several branches (the quick start's has the Allow and the Deny path of its
        edit). A conversation the cassette never saw (another prompt, a tool that now
        answers differently) stops the replay with one line that says what differed and
        how to record it, instead of serving an answer to a question nobody asked:
        """
    ),
    code(
        f"""
        from jupyter_toolhost import Session
        from jupyter_toolhost.model.cassette import CassetteMismatch, CassetteModel

        replay_only = CassetteModel("{CASSETTE}", cassette_mode="replay")
        drifted = Session(model=replay_only, permission_mode="dontAsk", cwd=".")
        try:
            await drifted.run("Clean up: delete every file.")
        except CassetteMismatch as mismatch:
            print(mismatch)
        """
    ),
    md(
        """
        ## The pytest plugin

        Installing `jupyter-toolhost` installs a pytest plugin. When nbval or nbmake runs a
        notebook that uses `%%agent`, it:

        - removes `ANTHROPIC_*` variables for the run, so kernels replay their cassettes
          offline whatever the environment holds (`--toolhost-live` keeps them, to record
          or to run against the real API);
        - sets `JUPYTER_TOOLHOST_APPROVAL_TIMEOUT=5` unless it is set, so a prompt a
          notebook forgot to allow fails the test instead of hanging it (with no front end
          a prompt is denied within about 3 s anyway);
        - tells nbval not to compare `application/vnd.jupyter.toolhost.v1+json` (nbval
          compares JSON payloads unsanitized, and this one carries timings and token counts
          for the JupyterLab renderer), and masks the durations in the `text/html` beside
          it, which are always inside `<span class="toolhost-time">`.

        So your own notebook needs no `conftest.py` and no sanitizer file.

        ## Recording a cassette

        - **From the real API**: delete the cassette file, set `ANTHROPIC_API_KEY`, run the
          notebook once (the first `%%agent` cell with `--cassette` records; cassette mode
          `auto` records only what the file does not hold yet, so a new branch is added the
          same way), and save it: the recording run shows what every replay will show (its
          footer says the usage "as recorded — a replay spends nothing").
        - **From a script**, like the notebooks here: `python notebooks/regenerate` plays the
          model with scripted turns on a loopback server that speaks the Messages API
          (`jupyter_toolhost.testing.MessagesServer`), records each cassette through the real
          `anthropic` client (marked `"source": {"kind": "scripted"}`, with no model name
          and no token counts), runs each notebook offline and saves its outputs.

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
