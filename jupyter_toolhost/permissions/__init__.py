"""Deciding whether a call may run: modes, guards, rules, settings files, the approver seam.

What each module owns:

- ``api``: the seams — `PermissionRequest`, `CanUseTool`, `Approver`, `BasicCanUseTool`.
- ``rules/``: rule strings parsed, compiled into matchers, Bash rule matching;
  ``settings/``: settings files of every scope, Claude Code's on request, changes on disk.
- ``written``: what the session's allowed calls may have written, and commands that run it.
- ``paths``: gitignore-style path patterns, resolution through an injected resolver;
  ``git_paths``: the paths a repository holds, learned without running its code;
  ``hosts``: URL hosts and domain rules in one canonical form (loopback, private addresses).
- ``facts``: what one call touches; ``guards``: what no rule or mode waives (protected
  folders, trees holding denied paths, commands that can't be checked); ``decision``: the
  pure `decide()`.
- ``engine``: `PermissionEngine`, the `CanUseTool` that combines all of it.
- ``check``: `check_permission`, the engine's decision for one call in every mode, explained
  (`Session.check`, ``%agent check``), without running the call or asking anyone.

Shell command lines are read by the `shell` package, hooks run by the `hooks` package; the
Bash sandbox's paths are the Bash tool's (`tools.bash.sandbox_paths`). The decision function
itself does no I/O beyond reading files through an injected resolver.
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
    end_cell_rules,
    read_denied,
    tools_denied_whole,
)
from .paths import OsResolver, PathResolver, PureResolver
from .rules.rules import Rule, RuleError, parse_rule
from .rules.ruleset import CompiledRules, RuleSource, compile_rules
from .settings.settings import MODE_ENV, Settings, SettingsError, load_settings, save_rule

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
    "end_cell_rules",
    "load_settings",
    "parse_rule",
    "read_denied",
    "register_shell_hooks",
    "resolve_ask",
    "save_rule",
    "tools_denied_whole",
]
