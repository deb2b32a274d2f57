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
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from ...core.types import PERMISSION_MODES, PermissionMode, RuleBehavior, ToolPermissionContext
from ...hooks.hooks import DEFAULT_HOOK_TIMEOUT, HOOK_EVENTS, HookEvent, Hooks
from ...hooks.shell_hooks import HookSpec, register_shell_hooks
from ..rules.rules import RuleError, parse_rule
from ..rules.ruleset import BEHAVIORS, LOCAL, PROJECT, USER, RuleSource

MODE_ENV = "JUPYTER_TOOLHOST_PERMISSION_MODE"
IMPORT_CLAUDE_KEY = "importClaudeCodeSettings"
"""The settings key that reads Claude Code's settings files as extra scopes (off by default)."""
Scope: TypeAlias = Literal["user", "project", "local"]
_SCOPE_SOURCE: dict[Scope, str] = {"user": USER, "project": PROJECT, "local": LOCAL}


class SettingsError(Exception):
    """A problem in a settings file: where it is and what is wrong."""

    def __init__(self, file: str, message: str, line: int | None = None) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file = file
        self.line = line
        self.message = message


@dataclass(frozen=True, slots=True)
class ClaudeImport:
    """What one Claude Code settings file gave: rule counts, hooks, directories."""

    source: str
    """The source name of its rules (``.claude/settings.json``, ``~/.claude/settings.json``)."""
    file: str
    """The file's full path."""
    rules: Mapping[RuleBehavior, int]
    hooks: int
    directories: int
    ignored: tuple[str, ...] = ()
    """What the file says that was left out (its defaultMode, unknown hook events)."""

    def summary(self) -> str:
        """``.claude/settings.json: 2 allow, 0 ask, 1 deny rules, 1 hook, 0 directories``."""
        rules = ", ".join(f"{self.rules.get(b, 0)} {b}" for b in ("allow", "ask", "deny"))
        hooks = f"{self.hooks} hook" + ("" if self.hooks == 1 else "s")
        dirs = f"{self.directories} director" + ("y" if self.directories == 1 else "ies")
        text = f"{self.source}: {rules} rules, {hooks}, {dirs}"
        if self.ignored:
            text += f" (left out: {'; '.join(self.ignored)})"
        return text


@dataclass(slots=True)
class Settings:
    """Everything the settings files say, plus what was wrong with them."""

    rules: dict[str, dict[RuleBehavior, tuple[str, ...]]] = field(default_factory=dict)
    sources: dict[str, RuleSource] = field(default_factory=dict)
    default_mode: PermissionMode | None = None
    additional_directories: tuple[str, ...] = ()
    hooks: tuple[HookSpec, ...] = ()
    problems: list[SettingsError] = field(default_factory=list)
    import_claude: bool = False
    """`importClaudeCodeSettings` as the most specific file that states it says."""
    claude_imports: list[ClaudeImport] = field(default_factory=list)
    """What was read from Claude Code's settings files, file by file (when enabled)."""

    def permission_context(
        self, *, mode: PermissionMode | None = None, env: Mapping[str, str] | None = None
    ) -> ToolPermissionContext:
        """The session's starting permission context: these rules and the chosen mode."""
        return ToolPermissionContext(
            mode=self.resolve_mode(mode, env=env),
            rules={name: dict(by) for name, by in self.rules.items()},
            additional_working_directories=self.additional_directories,
        )

    def resolve_mode(
        self, code_mode: PermissionMode | None = None, *, env: Mapping[str, str] | None = None
    ) -> PermissionMode:
        """The environment variable, else the code's choice, else defaultMode, else default."""
        value = (os.environ if env is None else env).get(MODE_ENV, "").strip()
        if value:
            if value in PERMISSION_MODES:
                return cast(PermissionMode, value)
            self.problems.append(
                SettingsError(
                    f"${MODE_ENV}",
                    f"unknown mode {value!r}; expected one of {', '.join(PERMISSION_MODES)}",
                )
            )
        return code_mode or self.default_mode or "default"

    def register_hooks(self, hooks: Hooks) -> None:
        """Add the settings' shell hooks to a session's hooks."""
        register_shell_hooks(hooks, self.hooks)


def scope_files(
    folder: str,
    sources: tuple[str, str, str],
    *,
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
) -> list[tuple[str, Path, str]]:
    """(source, file, pattern root) of the user, project and local scopes a program keeps
    in `folder` (``.toolhost``, ``.claude``), lowest precedence first; `sources` names them."""
    home_dir = Path(home) if home is not None else Path.home()
    project = Path(cwd)
    user, shared, local = sources
    return [
        (user, home_dir / folder / "settings.json", str(home_dir)),
        (shared, project / folder / "settings.json", str(project)),
        (local, project / folder / "settings.local.json", str(project)),
    ]


def settings_files(
    *, cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None
) -> list[tuple[str, Path, str]]:
    """(source, file, pattern root) of every scope, lowest precedence first."""
    return scope_files(".toolhost", (USER, PROJECT, LOCAL), cwd=cwd, home=home)


def load_file(
    settings: Settings, source: str, file: str, text: str, *, ignored: list[str] | None = None
) -> None:
    """Add one settings file's rules, directories and hooks to `settings` (problems too).

    With `ignored` the file is another program's (Claude Code's): its `defaultMode` is not
    applied, and hook events and hook types this package does not have are skipped; each of
    these is listed in `ignored` rather than reported as a problem.
    """
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        settings.problems.append(
            SettingsError(file, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno)
        )
        return
    if not isinstance(data, dict):
        settings.problems.append(SettingsError(file, "the settings must be a JSON object", 1))
        return
    problem = _Reporter(settings, file, text)
    permissions = data.get("permissions", {})
    if not isinstance(permissions, dict):
        problem("'permissions' must be an object", '"permissions"')
        permissions = {}
    rules: dict[RuleBehavior, tuple[str, ...]] = {}
    for behavior in BEHAVIORS:
        listed = permissions.get(behavior, [])
        if not isinstance(listed, list):
            problem(f"'permissions.{behavior}' must be a list of rule strings", f'"{behavior}"')
            continue
        good: list[str] = []
        for rule in listed:
            try:
                parse_rule(rule)
            except RuleError as exc:
                problem(
                    f"permissions.{behavior}: {exc}",
                    json.dumps(rule) if isinstance(rule, str) else f'"{behavior}"',
                )
                continue
            good.append(rule)
        rules[behavior] = tuple(good)
    settings.rules[source] = rules
    mode = permissions.get("defaultMode")
    if mode is not None and ignored is not None:
        ignored.append(f"defaultMode {mode!r} (the mode is this project's to choose)")
    elif mode is not None:
        if mode in PERMISSION_MODES:
            settings.default_mode = cast(PermissionMode, mode)
        else:
            problem(
                f"unknown defaultMode {mode!r}; expected one of {', '.join(PERMISSION_MODES)}",
                '"defaultMode"',
            )
    extra = permissions.get("additionalDirectories", [])
    if isinstance(extra, list) and all(isinstance(d, str) for d in extra):
        settings.additional_directories += tuple(extra)
    else:
        problem(
            "'permissions.additionalDirectories' must be a list of paths", '"additionalDirectories"'
        )
    settings.hooks += tuple(_hooks(data.get("hooks", {}), problem, file, ignored))
    flag = data.get(IMPORT_CLAUDE_KEY)
    if flag is not None and ignored is None:
        if isinstance(flag, bool):
            settings.import_claude = flag
        else:
            problem(f"'{IMPORT_CLAUDE_KEY}' must be true or false", f'"{IMPORT_CLAUDE_KEY}"')


class _Reporter:
    def __init__(self, settings: Settings, file: str, text: str) -> None:
        self.settings, self.file, self.text = settings, file, text

    def __call__(self, message: str, needle: str) -> None:
        at = self.text.find(needle)
        line = self.text.count("\n", 0, at) + 1 if at >= 0 else None
        self.settings.problems.append(SettingsError(self.file, message, line))


def _hooks(
    config: Any, problem: _Reporter, file: str, ignored: list[str] | None = None
) -> list[HookSpec]:
    if not isinstance(config, dict):
        problem("'hooks' must be an object of event names", '"hooks"')
        return []
    specs: list[HookSpec] = []
    for event, groups in config.items():
        if event not in HOOK_EVENTS and ignored is not None:
            ignored.append(f"hooks.{event} (no such hook event here)")
            continue
        if event not in HOOK_EVENTS:
            problem(
                f"unknown hook event {event!r}; expected one of {', '.join(HOOK_EVENTS)}",
                f'"{event}"',
            )
            continue
        if not isinstance(groups, list):
            problem(f"hooks.{event} must be a list of {{matcher, hooks}} objects", f'"{event}"')
            continue
        for group in groups:
            matcher = group.get("matcher", "") if isinstance(group, dict) else None
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(matcher, str) or not isinstance(entries, list):
                problem(
                    f"hooks.{event}: each entry needs a 'hooks' list and a string 'matcher'",
                    f'"{event}"',
                )
                continue
            try:
                re.compile("" if matcher == "*" else matcher)  # "*" matches every tool
            except re.error as exc:
                problem(
                    f"hooks.{event}: matcher {matcher!r} is not a valid regex: {exc}",
                    json.dumps(matcher),
                )
                continue
            for entry in entries:
                kind = entry.get("type", "command") if isinstance(entry, dict) else None
                if ignored is not None and isinstance(kind, str) and kind != "command":
                    ignored.append(f"hooks.{event}: a {kind!r} hook (only command hooks run here)")
                    continue
                spec = _hook_entry(cast(HookEvent, event), matcher, entry, file)
                if isinstance(spec, str):
                    problem(f"hooks.{event}: {spec}", f'"{event}"')
                else:
                    specs.append(spec)
    return specs


def _hook_entry(event: HookEvent, matcher: str, entry: Any, file: str) -> HookSpec | str:
    if not isinstance(entry, dict) or entry.get("type", "command") != "command":
        return 'each hook must be {"type": "command", "command": ...}'
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "a hook needs a non-empty 'command' string"
    timeout = entry.get("timeout", DEFAULT_HOOK_TIMEOUT)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        return f"timeout {timeout!r} must be a positive number of seconds"
    return HookSpec(event, matcher, command, float(timeout), file)


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
    data: dict[str, Any] = {}
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise SettingsError(
                str(path), f"invalid JSON, not changed: {exc.msg}", exc.lineno
            ) from None
        if not isinstance(data, dict):
            raise SettingsError(str(path), "the settings are not a JSON object, not changed", 1)
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict) or not isinstance(
        permissions.setdefault(behavior, []), list
    ):
        raise SettingsError(str(path), f"'permissions.{behavior}' is not a list, not changed")
    if rule not in permissions[behavior]:
        permissions[behavior].append(rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(temporary, path)
    return path


def settings_in_force(folder: Path, *, home: str | os.PathLike[str] | None = None) -> list[Path]:
    """The toolhost settings files that exist for `folder` (user, project, local)."""
    return [path for _, path, _ in settings_files(cwd=folder, home=home) if path.is_file()]
