"""One settings file, read: its JSON, its problems (with file and line), what it holds.

Both kinds of settings files go through here: this package's own scopes (`settings`) and
Claude Code's, read on request (`claude_settings`). Finding the files of a program's three
scopes (`scope_files`), reading one (`read_scope`), parsing its JSON (`parse_settings_json`)
and taking its rules, mode, directories and hooks (`load_file`) are written once, so the
two kinds report a broken file in the same words.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ...core.errors import ConfigurationError
from ...core.types import PERMISSION_MODES, PermissionMode, RuleBehavior, ToolPermissionContext
from ...hooks.hooks import DEFAULT_HOOK_TIMEOUT, HOOK_EVENTS, HookEvent, Hooks
from ...hooks.shell_hooks import HookSpec, register_shell_hooks
from ..rules.rules import RuleError, parse_rule
from ..rules.ruleset import BEHAVIORS, RuleSource

MODE_ENV = "JUPYTER_TOOLHOST_PERMISSION_MODE"
IMPORT_CLAUDE_KEY = "importClaudeCodeSettings"
"""The settings key that reads Claude Code's settings files as extra scopes (off by default)."""
NARROWING_MODES = ("default", "plan", "dontAsk")
"""Modes a folder may choose before it is trusted: none of them allows more than `default`."""


class SettingsError(ConfigurationError):
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

    rules: dict[str, dict[RuleBehavior, tuple[str, ...]]] = field(
        default_factory=dict[str, dict[RuleBehavior, tuple[str, ...]]]
    )
    sources: dict[str, RuleSource] = field(default_factory=dict[str, RuleSource])
    default_mode: PermissionMode | None = None
    additional_directories: tuple[str, ...] = ()
    hooks: tuple[HookSpec, ...] = ()
    problems: list[SettingsError] = field(default_factory=list[SettingsError])
    import_claude: bool = False
    """`importClaudeCodeSettings` as the most specific file that states it says."""
    claude_imports: list[ClaudeImport] = field(default_factory=list[ClaudeImport])
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
                return value
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


def read_scope(
    settings: Settings,
    source: str,
    path: Path,
    *,
    ignored: list[str] | None = None,
    narrow: bool = False,
) -> bool:
    """Read the settings file at `path`, when there is one, into `settings` as `source`
    (`load_file`; only its `narrowing_part` with `narrow`); a file that cannot be read is a
    problem. Whether it was read."""
    if not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        settings.problems.append(SettingsError(str(path), f"cannot be read: {exc}"))
        return False
    load_file(settings, source, str(path), text, ignored=ignored, narrow=narrow)
    return True


def parse_settings_json(file: str, text: str) -> dict[str, Any] | SettingsError:
    """A settings file's JSON object (an empty file is an empty one), or what is wrong."""
    try:
        data: object = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return SettingsError(file, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno)
    found = json_object(data)
    if found is None:
        return SettingsError(file, "the settings must be a JSON object", 1)
    return found


def json_object(value: object) -> dict[str, Any] | None:
    """`value` when it is a JSON object (a dict), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def json_array(value: object) -> list[Any] | None:
    """`value` when it is a JSON array (a list), else None."""
    return cast("list[Any]", value) if isinstance(value, list) else None


def narrowing_part(data: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a folder's settings that applies before the folder is trusted (see
    `trust`): deny and ask rules, and a mode no wider than `default`. Every other key is
    left out, those a later version may read included."""
    permissions = json_object(data.get("permissions"))
    if permissions is None:
        return {}
    kept: dict[str, Any] = {key: permissions[key] for key in ("deny", "ask") if key in permissions}
    if permissions.get("defaultMode") in NARROWING_MODES:
        kept["defaultMode"] = permissions["defaultMode"]
    return {"permissions": kept} if kept else {}


def load_file(
    settings: Settings,
    source: str,
    file: str,
    text: str,
    *,
    ignored: list[str] | None = None,
    narrow: bool = False,
) -> None:
    """Add one settings file's rules, directories and hooks to `settings` (problems too).

    With `ignored` the file is another program's (Claude Code's): its `defaultMode` is not
    applied, and hook events and hook types this package does not have are skipped; each of
    these is listed in `ignored` rather than reported as a problem. With `narrow` (a folder
    not trusted yet) only its `narrowing_part` is read.
    """
    data = parse_settings_json(file, text)
    if isinstance(data, SettingsError):
        settings.problems.append(data)
        return
    if narrow:
        data = narrowing_part(data)
    problem = _Reporter(settings, file, text)
    permissions = json_object(data.get("permissions", {}))
    if permissions is None:
        problem("'permissions' must be an object", '"permissions"')
        permissions = {}
    rules: dict[RuleBehavior, tuple[str, ...]] = {}
    for behavior in BEHAVIORS:
        listed = json_array(permissions.get(behavior, []))
        if listed is None:
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
            settings.default_mode = mode
        else:
            problem(
                f"unknown defaultMode {mode!r}; expected one of {', '.join(PERMISSION_MODES)}",
                '"defaultMode"',
            )
    extra = json_array(permissions.get("additionalDirectories", []))
    if extra is not None and all(isinstance(d, str) for d in extra):
        settings.additional_directories += tuple(str(d) for d in extra)
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
    config: object, problem: _Reporter, file: str, ignored: list[str] | None = None
) -> list[HookSpec]:
    events = json_object(config)
    if events is None:
        problem("'hooks' must be an object of event names", '"hooks"')
        return []
    specs: list[HookSpec] = []
    for event, value in events.items():
        if event not in HOOK_EVENTS and ignored is not None:
            ignored.append(f"hooks.{event} (no such hook event here)")
            continue
        if event not in HOOK_EVENTS:
            problem(
                f"unknown hook event {event!r}; expected one of {', '.join(HOOK_EVENTS)}",
                f'"{event}"',
            )
            continue
        groups = json_array(value)
        if groups is None:
            problem(f"hooks.{event} must be a list of {{matcher, hooks}} objects", f'"{event}"')
            continue
        for item in groups:
            group = json_object(item)
            matcher: object = group.get("matcher", "") if group is not None else None
            entries = json_array(group.get("hooks")) if group is not None else None
            if not isinstance(matcher, str) or entries is None:
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
                fields = json_object(entry)
                kind: object = fields.get("type", "command") if fields is not None else None
                if ignored is not None and isinstance(kind, str) and kind != "command":
                    ignored.append(f"hooks.{event}: a {kind!r} hook (only command hooks run here)")
                    continue
                spec = _hook_entry(event, matcher, fields, file)
                if isinstance(spec, str):
                    problem(f"hooks.{event}: {spec}", f'"{event}"')
                else:
                    specs.append(spec)
    return specs


def _hook_entry(
    event: HookEvent, matcher: str, entry: dict[str, Any] | None, file: str
) -> HookSpec | str:
    if entry is None or entry.get("type", "command") != "command":
        return 'each hook must be {"type": "command", "command": ...}'
    command: object = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "a hook needs a non-empty 'command' string"
    timeout: object = entry.get("timeout", DEFAULT_HOOK_TIMEOUT)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        return f"timeout {timeout!r} must be a positive number of seconds"
    return HookSpec(event, matcher, command, float(timeout), file)
