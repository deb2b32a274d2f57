"""02 — Tool calling, explained: for educators; every output is deterministic."""

from __future__ import annotations

from common import Spec, code, md, sandbox_cell

from jupyter_toolhost.testing import Turn, text, tool_use

CASSETTE = "../cassettes/02-tool-calling-explained.json"
PY_CASSETTE = "../cassettes/02-tool-calling-explained-python.json"

CELLS = [
    md(
        """
        # Tool calling, explained

        A walk through the machinery of an agent's tool calls, for teaching: what the model
        is told about a tool, which calls run together, who decides whether a call may run,
        how a hook can change a call, how tools can stay out of the prompt until needed, and
        what happens to a result that is too big.

        Every output below is the same on every run: the model's side is replayed from
        cassettes in `cassettes/`, where scripted answers stand in for the model; the tools
        really run. No API key is needed.
        """
    ),
    sandbox_cell("02"),
    code("%load_ext jupyter_toolhost"),
    md(
        """
        ## 1. A tool is a function with a schema

        `@tool` turns a function into a tool: its type hints become the JSON schema of its
        input, its docstring the description. The flags say how it may be run; unless a
        tool says otherwise it is *not* read-only and *not* safe to run concurrently.
        """
    ),
    code(
        '''
        from jupyter_toolhost import tool


        @tool(read_only=True, concurrency_safe=True)
        def word_count(path: str) -> str:
            """Count the words in a text file.

            Args:
                path: The file to count, relative to the working directory.
            """
            return f"{len(Path(path).read_text().split())} words"
        '''
    ),
    md("This is exactly the entry the model receives in the request's `tools` array:"),
    code(
        """
        import json

        from jupyter_toolhost.agent.prompt import tool_definitions

        print(json.dumps(tool_definitions([word_count])[0], indent=2))
        """
    ),
    md(
        """
        The next `%%agent` cell offers it to the model beside the built-in tools.
        `%agent tools` lists them all with their flags:
        """
    ),
    code("%agent tools"),
    code(
        f"""
        %%agent --cassette {CASSETTE}
        How many words are in notes.md?
        """
    ),
    md(
        """
        ## 2. Which calls run together

        The model may ask for several calls in one message. They are split into batches in
        order: consecutive calls that are concurrency-safe run together; any other call
        runs alone. Here the model asks for `[Read, Bash, Edit, Read]`: the first Read and
        the read-only `ls` run together, the Edit alone, then the last Read.
        """
    ),
    code("%agent allow Edit(notes.md)"),
    code(
        """
        %%agent
        Read notes.md, list the folder, fix the typo in notes.md, then read grades.py.
        """
    ),
    md(
        """
        The same calls on a time axis, drawn from the recorded events: the calls of a batch
        side by side, each batch after the one before, time spent waiting for an approval
        hatched, a call stopped because a sibling failed marked. Hover a bar for its
        details. The durations differ from run to run, so this cell's output is not
        compared when the notebook runs as a test (`NBVAL_IGNORE_OUTPUT`):
        """
    ),
    code(
        """
        # NBVAL_IGNORE_OUTPUT
        %agent history --timeline
        """
    ),
    md(
        """
        What exactly went to the model on the last turn: the system prompt, the `tools`
        array (deferred tools marked), the messages with each tool_use linked to its
        result, and the API parameters, each with its size. Without an API key the token
        figures are estimates (bytes / 4), and the sizes depend on this folder's path, so
        this output is not compared either:
        """
    ),
    code(
        """
        # NBVAL_IGNORE_OUTPUT
        %agent request
        """
    ),
    md("The same request as a Python dict, `session.request(N)`:"),
    code(
        """
        from jupyter_toolhost.jupyter.cell import current_host

        session = current_host().session
        body = session.request(-1)
        print(sorted(body))
        print([tool["name"] for tool in body["tools"]][:6], "...")
        for message in body["messages"]:
            kinds = [b["type"] for b in message["content"]] if isinstance(
                message["content"], list) else ["text"]
            print(message["role"], kinds)
        """
    ),
    md(
        """
        ## 3. Who decides: permission modes

        Before a call runs, the permission engine looks at the tool's flags, the rules and
        the permission mode. `%agent check` runs that engine on a call without running the
        call, in every mode: *ask* shows buttons in a notebook; `dontAsk` turns every *ask*
        into a denial, which is what unattended runs want. The Edit of `notes.md` is
        allowed by the rule added above; a shell command also shows how it was parsed:
        """
    ),
    code("%agent check Edit notes.md"),
    code('%agent check Bash "rm scores.csv && ls"'),
    md(
        """
        ## 4. A hook that rewrites a call

        Hooks run before (and after) each call. A `PreToolUse` hook may allow, deny or ask,
        and it may rewrite the input. This one caps what any shell command prints by piping
        it into `head -n 3`. The model asked for `cat notes.md`; the hook changed what ran.

        This part uses the Python API directly: a `Session` is what a `%%agent` cell runs.
        """
    ),
    code(
        f'''
        from jupyter_toolhost import Session
        from jupyter_toolhost.model.cassette import CassetteModel
        from jupyter_toolhost.permissions import HookOutput, Hooks
        from jupyter_toolhost.tools import builtin_tools


        def cap_output(call):
            """PreToolUse: run the command with its output cut to 3 lines."""
            command = call.tool_input["command"]
            print(f"hook: {{command!r}} -> {{command + ' | head -n 3'!r}}")
            capped = {{**call.tool_input, "command": command + " | head -n 3"}}
            return HookOutput(updated_input=capped)


        hooks = Hooks()
        hooks.add("PreToolUse", cap_output, matcher="Bash")
        session = Session(
            tools=builtin_tools(),
            model=CassetteModel("{PY_CASSETTE}"),
            hooks=hooks,
            permission_mode="dontAsk",
            cwd=".",
        )
        print(await session.run("Show me notes.md with cat."))
        '''
    ),
    md("What the model got back is the rewritten command's output:"),
    code(
        """
        def last_results(session):
            return [b for b in session.messages[-2]["content"] if b["type"] == "tool_result"]

        for block in last_results(session):
            print(block["content"])
        """
    ),
    md(
        """
        ## 5. Deferred tools and ToolSearch

        Every tool definition costs prompt tokens on every request. A tool marked
        `should_defer=True` is left out of the `tools` array; the model sees only its name
        and finds it with `ToolSearch` when it needs it. Here are 40 made-up CRM tools,
        all deferred, and the bytes of the `tools` array with and without deferral:
        """
    ),
    code(
        """
        from pydantic import BaseModel

        from jupyter_toolhost import build_tool
        from jupyter_toolhost.disclosure import search_tools, tools_for_request
        from jupyter_toolhost.tools.tool_search import with_tool_search


        class Record(BaseModel):
            id: str
            fields: dict[str, str] = {}


        def crm_tool(verb, thing):
            async def call(input, context):
                return f"{verb} {thing} {input.id}: ok"

            return build_tool(
                name=f"crm_{verb}_{thing}",
                input_model=Record,
                call=call,
                description=f"{verb.capitalize()} a {thing} in the CRM by id; fields are optional.",
                should_defer=True,
            )


        crm = [crm_tool(v, t) for v in ("create", "update", "close", "archive", "export")
               for t in ("ticket", "contact", "deal", "invoice", "meeting", "note", "task", "lead")]
        # with_tool_search adds ToolSearch, since some tools are deferred
        pool = with_tool_search([*builtin_tools(), *crm])
        everything = sum(len(json.dumps(t.to_api())) for t in pool)
        deferred = sum(len(json.dumps(d)) for d in tools_for_request(pool, []).api_tools)
        print(f"{len(crm)} deferred tools")
        print(f"tools array, all loaded: {everything:,} bytes")
        saved = 1 - deferred / everything
        print(f"tools array, deferred:   {deferred:,} bytes ({saved:.0%} fewer)")
        """
    ),
    md(
        """
        The model asks `ToolSearch` in words; it ranks the deferred tools (names, words of
        the description, related words) and the best ones are loaded for the model to call:
        """
    ),
    code(
        """
        for found in search_tools("create a ticket for a customer", crm).tools[:3]:
            print(found.name)
        """
    ),
    md(
        """
        The same through the agent. The CRM tools are not read-only, so in `dontAsk` mode
        they need an allow rule (a session rule here; `%agent allow` does the same):
        """
    ),
    code(
        """
        from jupyter_toolhost.permissions import add_session_rules

        session.set_tools(pool)
        add_session_rules(session.context, ("crm_create_ticket",), "allow")
        asked = len(session.messages)
        print(await session.run("Create a ticket for customer 42."))
        for message in session.messages[asked:]:
            for block in message["content"]:
                if block["type"] == "tool_use":
                    print("call  ", block["name"], json.dumps(block["input"]))
                elif block["type"] == "tool_result":
                    print("result", json.dumps(block["content"])[:200])
        """
    ),
    md(
        """
        ## 6. A result too big to send back

        A tool declares how big a result may be (`max_result_size_chars`). A bigger result
        is saved to a file and the model gets a `<persisted-output>` block with the path and
        a 2,000-byte preview instead: nothing is thrown away, and the prompt stays small.
        """
    ),
    code(
        '''
        @tool(read_only=True, max_result_size_chars=5_000)
        def roll_call(times: int) -> str:
            """Repeat the class list `times` times."""
            names = "ada ben cleo dev eli fay gus hal ivy jon"
            return "\\n".join(f"{i}: {names}" for i in range(times))


        session.set_tools([*pool, roll_call])
        print(await session.run("Call roll_call with times=500."))
        header, preview = last_results(session)[0]["content"].split("\\n\\n", 1)
        print(header.replace(str(Path.cwd()), "<this folder>"))  # the model sees the full path
        print("\\n".join(preview.splitlines()[:4]))
        '''
    ),
    code(
        """
        for saved in sorted(session.session_dir.glob("tool-results/*")):
            print(saved.name, f"{saved.stat().st_size:,} bytes")
        """
    ),
]

TURNS = [
    # %%agent: word count
    Turn([tool_use("word_count", {"path": "notes.md"})]),
    Turn([text("notes.md has 29 words.")]),
    # %%agent: [Read, Bash, Edit, Read]
    Turn(
        [
            tool_use("Read", {"file_path": "notes.md"}),
            tool_use("Bash", {"command": "ls", "description": "List the folder"}),
            tool_use(
                "Edit",
                {"file_path": "notes.md", "old_string": "Teh scores", "new_string": "The scores"},
            ),
            tool_use("Read", {"file_path": "grades.py"}),
        ]
    ),
    Turn([text('Done: I fixed "Teh" in notes.md; grades.py maps scores to letters A-D.')]),
    # Session: hook rewrites cat
    Turn([tool_use("Bash", {"command": "cat notes.md", "description": "Show notes.md"})]),
    Turn([text("Here are the first lines of notes.md.")]),
    # Session: ToolSearch then the found tool
    Turn([tool_use("ToolSearch", {"query": "create a ticket for a customer"})]),
    Turn([tool_use("crm_create_ticket", {"id": "42", "fields": {"subject": "Support"}})]),
    Turn([text("Ticket created for customer 42.")]),
    # Session: persisted result
    Turn([tool_use("roll_call", {"times": 500})]),
    Turn([text("The roll call is long, so it was saved to a file; I read its preview.")]),
]

SPEC = Spec("02-tool-calling-explained", CELLS, TURNS)
