"""The agent: a `Session` and the loop it runs (model → tool_use → orchestrator → tool_result).

What each module owns:

- ``session``: `Session`, the public Python API; ``session_config``: `SessionConfig`, the
  options it is made from, each documented once; ``session_build``: `assemble`, which makes
  every part of a session from the config in one pass; ``session_setup``: the pieces it
  reads (permissions, side models, settings watch, MCP).
- ``loop``: the agent loop, which holds the conversation; ``request_builder``: what each
  request of it sends (tools offered, disclosure, thinking, clearing, the system prompt,
  the prompt cache); ``loop_state``: its settings, a run's totals and `RunResult`;
  ``response``: one streamed model response read into the orchestrator.
- ``prompt``: the system prompt and tool definitions a request carries; ``sent``: the exact
  body and usage of each request; ``transcript``: the JSON-lines session transcript.
- ``compaction``: older turns replaced by a summary; ``thinking``: extended thinking options
  and the blocks that must stay.
- ``events``: what a session reports while it runs, as plain data for front ends.
- ``subagent_loop``: the loop's side of the subagent seam (`core.runner`).

Nothing here imports IPython, ipywidgets or anthropic (the model is reached through
`model.base.Model`), nor a single tool's modules: tools come from `tools.builtin_tools()`
and `tools.deferred_tool_finder()`, and act on the session through the flags and hooks they
declare (`Tool.on_session_start`, the context's `Lifetime`).
"""
