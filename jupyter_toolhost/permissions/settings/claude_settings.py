"""Claude Code's own settings files as extra scopes, read only on request.

Off by default: reading another program's allow rules widens what runs here without anyone
having said so in this project's files. It is turned on by ``"importClaudeCodeSettings":
true`` in a ``.toolhost/settings.json`` (the user's, the project's or the local one; the most
specific file that states it wins), or for one session by ``%agent import-claude-settings``
(`Session.import_claude_settings()`).

The files, each a source of its own named after its file (that is what ``%agent rules``
shows): ``~/.claude/settings.json``, ``.claude/settings.json`` and
``.claude/settings.local.json`` under the working directory. What is taken from them:

- ``permissions.allow``, ``ask`` and ``deny``, as written: Claude Code's tool names and rule
  syntax are the same here, and as for every scope a deny anywhere beats an allow anywhere;
- ``permissions.additionalDirectories``;
- ``hooks``: the command hooks of the events this package has (PreToolUse, PostToolUse,
  PostToolUseFailure, UserPromptSubmit, Stop), run with ``CLAUDE_PROJECT_DIR`` set as
  Claude Code sets it.

Not taken: ``permissions.defaultMode``. The mode is the widest switch there is, and it stays
with this project (its own settings files, ``--mode``, ``JUPYTER_TOOLHOST_PERMISSION_MODE``);
an import says it left it out, as it does for hooks of events or types that do not exist
here. Other keys (``env``, ``model``, ``statusLine``...) are ignored. A broken file is a
problem with its file and line, like any settings file's, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...hooks.shell_hooks import register_shell_hooks
from ..rules.ruleset import BEHAVIORS, RuleSource
from .settings_file import ClaudeImport as ClaudeImport
from .settings_file import Settings, read_scope, scope_files
from .trust import file_actions as folder_actions_of

if TYPE_CHECKING:
    from ...core.context import AppState, ToolUseContext
    from ...hooks.hooks import Hooks

USER_FILE = "~/.claude/settings.json"
PROJECT_FILE = ".claude/settings.json"
LOCAL_FILE = ".claude/settings.local.json"


def claude_settings_files(
    *, cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None
) -> list[tuple[str, Path, str]]:
    """(source, file, pattern root) of Claude Code's scopes, lowest precedence first."""
    return scope_files(".claude", (USER_FILE, PROJECT_FILE, LOCAL_FILE), cwd=cwd, home=home)


def read_claude_settings(
    settings: Settings,
    *,
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
    skip: Collection[str] = (),
    narrow_folder: bool = False,
) -> list[ClaudeImport]:
    """Add the Claude Code settings files that exist (but those in `skip`) to `settings`
    as scopes of their own; returns what each gave (also kept in `claude_imports`). With
    `narrow_folder` (a folder not trusted) the folder's files give only what narrows."""
    found: list[ClaudeImport] = []
    for source, path, root in claude_settings_files(cwd=cwd, home=home):
        if source in skip:
            continue
        hooks, directories = len(settings.hooks), len(settings.additional_directories)
        ignored: list[str] = []
        narrow = narrow_folder and source != USER_FILE
        if narrow and folder_actions_of(path, source):
            ignored.append("its hooks, allow rules and directories (this folder is not trusted)")
        if not read_scope(settings, source, path, ignored=ignored, narrow=narrow):
            continue
        if source not in settings.rules:  # not a JSON object: the problem says why
            continue
        settings.sources[source] = RuleSource(str(path), root)
        rules = settings.rules[source]
        found.append(
            ClaudeImport(
                source=source,
                file=str(path),
                rules={b: len(rules.get(b, ())) for b in BEHAVIORS},
                hooks=len(settings.hooks) - hooks,
                directories=len(settings.additional_directories) - directories,
                ignored=tuple(ignored),
            )
        )
    settings.claude_imports.extend(found)
    return found


def import_into(
    context: ToolUseContext,
    *,
    hooks: Hooks | None,
    sources: dict[str, RuleSource] | None,
    skip: Collection[str] = (),
    home: str | os.PathLike[str] | None = None,
    trusted: bool = True,
) -> tuple[list[ClaudeImport], list[str]]:
    """Import Claude Code's settings files into a running session: their rules join the
    permission context as sources of their own (`sources`, the engine's, learns where each
    file is), their directories join the working directories, their hooks join `hooks`.
    Returns what was imported and the problems found (as text with file and line). In a
    folder that is not `trusted`, the folder's files give only what narrows."""
    settings = Settings()
    found = read_claude_settings(
        settings, cwd=context.cwd, home=home, skip=skip, narrow_folder=not trusted
    )
    if sources is not None:
        sources.update(settings.sources)

    def update(state: AppState) -> AppState:
        permission = state.tool_permission_context
        rules = {source: dict(by) for source, by in permission.rules.items()}
        rules.update({source: dict(by) for source, by in settings.rules.items()})
        known = permission.additional_working_directories
        directories = known + tuple(d for d in settings.additional_directories if d not in known)
        updated = replace(permission, rules=rules, additional_working_directories=directories)
        return replace(state, tool_permission_context=updated)

    if found:
        context.set_app_state(update)
    if hooks is not None:
        register_shell_hooks(hooks, settings.hooks)
    return found, [str(problem) for problem in settings.problems]
