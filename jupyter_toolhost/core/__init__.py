"""The core every other part builds on: what a tool is, what a call gets, how messages stay valid.

What each module owns:

- ``tool``: `Tool`, `build_tool()` and the `@tool` decorator; ``types``: the plain data every
  layer shares (permission results, tool calls and results, errors); ``context``:
  `ToolUseContext`, what every call receives.
- ``conversation``: keeping a conversation valid for the Messages API (one tool_result per
  tool_use); ``history``: the conversation as a list that notes its edits;
  ``error_results``: how a failed call reads to the model.
- ``results``: the result budget and persistence of big results; ``images``: images the
  API accepts; ``redaction``: secrets replaced by markers in every tool result, with
  ``token_shapes`` (the well-known token formats).
- ``runner``: the seam through which tools start subagents (the loop implements it).
- ``process``: subprocesses in their own process group; ``workdir``: the working folder and
  the settings that apply to it; ``kernel_host``: where the kernel runs.
- ``json_values``: narrowing values read from JSON without a schema.
- ``text``: how a text is cut for a line (the cut marked); ``numbers``: how every number
  shown to a person is written (`format_number`).

The core imports nothing above it (no agent, orchestration, permissions or tools), and never
IPython, ipywidgets or anthropic.
"""
