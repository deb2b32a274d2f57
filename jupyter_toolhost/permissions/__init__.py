"""Deciding whether a call may run: hooks, modes, rules, settings files, the approver seam.

What each module owns:

- ``api``: the seams — `PermissionRequest`, `CanUseTool`, `Approver`, `BasicCanUseTool`.
- ``hooks``: Python hooks and their combination; ``shell_hooks``: hooks as shell commands.
- ``rules``: rule strings parsed; ``ruleset``: rules of every source compiled to matchers.
- ``shell_subset``: the bash the check understands, in one place (the rest can't be
  checked); ``shell_parse`` (tree-sitter-bash) and ``shell_source`` (where the grammar reads
  a line differently from bash), ``shell_words`` (ANSI-C quotes, brace expansion),
  ``shell_wrappers`` (``env``, ``sudo``, ``/bin/`` prefixes...), ``shell_lex`` (words),
  ``shell``: shell command lines as rules see them; ``shell_rules``: Bash rule matching;
  ``shell_safety``: which commands only read, read whole trees, or hide code in options;
  ``shell_globs``: globs checked by what they can match.
- ``written``: what the session's allowed calls may have written, and commands that run it.
- ``paths``: gitignore-style path patterns, resolution through an injected resolver;
  ``git_paths``: the paths a repository holds, learned without running its code;
  ``hosts``: URL hosts and domain rules in one canonical form (loopback, private addresses).
- ``facts``: what one call touches; ``guards``: what no rule or mode waives (protected
  folders, trees holding denied paths, commands that can't be checked); ``decision``: the
  pure `decide()`.
- ``sandbox_paths``: deny rules turned into the paths the Bash sandbox hides or freezes.
- ``settings``: settings files of every scope, `save_rule`; ``settings_watch``: changes to
  them on disk during a session; ``claude_settings``: Claude Code's settings files as extra
  scopes, only on request (``importClaudeCodeSettings``).
- ``engine``: `PermissionEngine`, the `CanUseTool` that combines all of it.
- ``check``: `check_permission`, the engine's decision for one call in every mode, explained
  (`Session.check`, ``%agent check``), without running the call or asking anyone.

The decision function itself does no I/O beyond reading files through an injected resolver.
"""

from __future__ import annotations

from ..hooks.hooks import Hook, HookInput, HookOutput, Hooks
from ..hooks.shell_hooks import HookSpec, ShellHook, register_shell_hooks
from ..shell.commands import ShellAnalysis, analyze
from .api import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    BasicCanUseTool,
    CanUseTool,
    PermissionRequest,
    resolve_ask,
)
from .decision import PLAN_MODE_MESSAGE, decide
from .engine import (
    Classifier,
    PermissionEngine,
    add_session_rules,
    read_denied,
    tools_denied_whole,
)
from .paths import OsResolver, PathResolver, PureResolver
from .rules.rules import Rule, RuleError, parse_rule
from .rules.ruleset import CompiledRules, RuleSource, compile_rules
from .settings.load import load_settings
from .settings.settings import MODE_ENV, Settings, SettingsError, save_rule

__all__ = [
    "MODE_ENV",
    "PLAN_MODE_MESSAGE",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "BasicCanUseTool",
    "CanUseTool",
    "Classifier",
    "CompiledRules",
    "Hook",
    "HookInput",
    "HookOutput",
    "HookSpec",
    "Hooks",
    "OsResolver",
    "PathResolver",
    "PermissionEngine",
    "PermissionRequest",
    "PureResolver",
    "Rule",
    "RuleError",
    "RuleSource",
    "Settings",
    "SettingsError",
    "ShellAnalysis",
    "ShellHook",
    "add_session_rules",
    "analyze",
    "compile_rules",
    "decide",
    "load_settings",
    "parse_rule",
    "read_denied",
    "register_shell_hooks",
    "resolve_ask",
    "save_rule",
    "tools_denied_whole",
]
