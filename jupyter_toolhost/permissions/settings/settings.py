"""Settings files: permission rules, the default mode and shell hooks, from every scope.

Scopes, as in Claude Code: ``~/.toolhost/settings.json`` (user), ``<cwd>/.toolhost/settings.json``
(project), ``<cwd>/.toolhost/settings.local.json`` (local, git-ignored), plus session rules
added at run time. A deny in any scope beats an allow in any scope. A broken file or rule is
reported as a `SettingsError` (file, line, what is wrong) in `Settings.problems`; everything
else still loads. The mode is, first to last: ``JUPYTER_TOOLHOST_PERMISSION_MODE``, the mode
the code chose, ``permissions.defaultMode`` (local, then project, then user), ``default``.

Claude Code's own settings files (``.claude/settings.json`` and the like) are read too only
when ``"importClaudeCodeSettings": true`` is in one of these files (off by default: another
program's allow rules would widen what runs here); see `claude_settings`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from ...core.json_values import json_array, json_object
from ...core.private import private_folder
from ...core.types import RuleBehavior
from ..rules.rules import parse_rule
from ..rules.ruleset import BEHAVIORS, LOCAL, PROJECT, SESSION, USER, RuleSource
from .claude_settings import read_claude_settings
from .settings_file import IMPORT_CLAUDE_KEY as IMPORT_CLAUDE_KEY
from .settings_file import MODE_ENV as MODE_ENV
from .settings_file import Settings as Settings
from .settings_file import SettingsError as SettingsError
from .settings_file import load_file as load_file
from .settings_file import parse_settings_json, read_scope
from .settings_file import scope_files as scope_files

Scope: TypeAlias = Literal["user", "project", "local"]
_SCOPE_SOURCE: dict[Scope, str] = {"user": USER, "project": PROJECT, "local": LOCAL}


def settings_files(
    *, cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None
) -> list[tuple[str, Path, str]]:
    """(source, file, pattern root) of every scope, lowest precedence first."""
    return scope_files(".toolhost", (USER, PROJECT, LOCAL), cwd=cwd, home=home)


def load_settings(
    *,
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
    session_rules: Mapping[RuleBehavior, Sequence[str]] | None = None,
    import_claude: bool | None = None,
    trusted: bool = True,
) -> Settings:
    """Read every scope's settings file; problems are collected, never raised.

    Claude Code's settings files join as extra scopes when `import_claude` is True, or when
    it is None (the default) and the files say ``"importClaudeCodeSettings": true``. When the
    folder is not `trusted` (see `trust`), its own files (project and local, and Claude
    Code's of the folder) give only what narrows: deny and ask rules, a narrower mode.
    """
    settings = Settings()
    for source, path, root in settings_files(cwd=cwd, home=home):
        settings.sources[source] = RuleSource(str(path), root)
        read_scope(settings, source, path, narrow=not trusted and source != USER)
    if import_claude if import_claude is not None else settings.import_claude:
        read_claude_settings(settings, cwd=cwd, home=home, narrow_folder=not trusted)
    settings.sources[SESSION] = RuleSource(SESSION, str(cwd))
    if session_rules:
        settings.rules[SESSION] = {b: tuple(session_rules.get(b, ())) for b in BEHAVIORS}
    return settings


def save_rule(
    rule: str,
    behavior: RuleBehavior = "allow",
    *,
    scope: Scope = "project",
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
) -> Path:
    """Add a rule to a scope's settings file (keeping everything else in it); returns the file.

    Raises `RuleError` for a bad rule and `SettingsError` when the file exists but is not a
    JSON object — it is never overwritten then.
    """
    parse_rule(rule)
    source = _SCOPE_SOURCE[scope]
    path = next(p for s, p, _ in settings_files(cwd=cwd, home=home) if s == source)
    data: dict[str, object] = {}
    if path.is_file():
        parsed = parse_settings_json(str(path), path.read_text(encoding="utf-8"))
        if isinstance(parsed, SettingsError):
            raise SettingsError(parsed.file, f"{parsed.message}, not changed", parsed.line)
        data = parsed
    permissions = json_object(data.setdefault("permissions", {}))
    listed = json_array(permissions.setdefault(behavior, [])) if permissions is not None else None
    if listed is None:
        raise SettingsError(str(path), f"'permissions.{behavior}' is not a list, not changed")
    if rule not in listed:
        listed.append(rule)
    private_folder(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(temporary, path)
    return path


def settings_in_force(folder: Path, *, home: str | os.PathLike[str] | None = None) -> list[Path]:
    """The toolhost settings files that exist for `folder` (user, project, local)."""
    return [path for _, path, _ in settings_files(cwd=folder, home=home) if path.is_file()]
