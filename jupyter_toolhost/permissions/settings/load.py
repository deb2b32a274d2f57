"""Loading every scope's settings: the toolhost's files, then Claude Code's when asked.

A module of its own above `settings` (one file read into `Settings`) and `claude_settings`
(Claude Code's files as extra scopes, which build on `settings`), so that neither of those
imports the other back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ...core.types import RuleBehavior
from ..rules.ruleset import BEHAVIORS, SESSION, RuleSource
from .claude_settings import read_claude_settings
from .settings import Settings, SettingsError, load_file, settings_files


def load_settings(
    *,
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
    session_rules: Mapping[RuleBehavior, Sequence[str]] | None = None,
    import_claude: bool | None = None,
) -> Settings:
    """Read every scope's settings file; problems are collected, never raised.

    Claude Code's settings files join as extra scopes when `import_claude` is True, or when
    it is None (the default) and the files say ``"importClaudeCodeSettings": true``.
    """
    settings = Settings()
    for source, path, root in settings_files(cwd=cwd, home=home):
        settings.sources[source] = RuleSource(str(path), root)
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            settings.problems.append(SettingsError(str(path), f"cannot be read: {exc}"))
            continue
        load_file(settings, source, str(path), text)
    if import_claude if import_claude is not None else settings.import_claude:
        read_claude_settings(settings, cwd=cwd, home=home)
    settings.sources[SESSION] = RuleSource(SESSION, str(cwd))
    if session_rules:
        settings.rules[SESSION] = {b: tuple(session_rules.get(b, ())) for b in BEHAVIORS}
    return settings
