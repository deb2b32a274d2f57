"""Settings files: permission rules, the default mode and hooks, from every scope.

- ``settings``: the toolhost's settings files of every scope, `save_rule`.
- ``claude_settings``: Claude Code's settings files as extra scopes, only on request
  (``importClaudeCodeSettings``).
- ``settings_watch``: changes to the files on disk while a session runs.
- ``trust``: folder trust: a folder's own settings run nothing and widen nothing until a
  person trusts the folder (what waits, what applies at once, where trust is kept).
"""
