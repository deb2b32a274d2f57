"""Hooks: code that runs around tool calls and prompts (Claude Code's five events).

- ``hooks``: the events, Python hooks and how several decisions combine (PreToolUse,
  PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop).
- ``shell_hooks``: hooks configured in settings as shell commands, speaking Claude Code's
  hook protocol.
- ``turn_hooks``: UserPromptSubmit and Stop around a prompt, behind the small protocol the
  loop calls.
"""
