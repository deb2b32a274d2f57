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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from ...core.errors import ConfigurationError
from ...core.json_checks import Location, field_problems, line_of, value_at, without
from ...core.json_values import json_array, json_object
from ...core.types import PERMISSION_MODES, PermissionMode, RuleBehavior, ToolPermissionContext
from ...hooks.hooks import HOOK_EVENTS, HookEvent, Hooks
from ...hooks.shell_hooks import HookSpec, register_shell_hooks
from ..rules.ruleset import RuleSource
from .settings_schema import EXPECTED, SETTINGS_FILE, SettingsFileModel
from .settings_schema import IMPORT_CLAUDE_KEY as IMPORT_CLAUDE_KEY

MODE_ENV = "JUPYTER_TOOLHOST_PERMISSION_MODE"
NARROWING_MODES = ("default", "plan", "dontAsk")
"""Modes a folder may choose before it is trusted: none of them allows more than `default`."""


class SettingsError(ConfigurationError):
    """A problem in a settings file: where it is and what is wrong."""

    def __init__(
        self, file: str, message: str, line: int | None = None, *, field: str | None = None
    ) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file = file
        self.line = line
        self.message = message
        """What is wrong, starting with the field when there is one (``permissions.allow[3]:
        must be a rule string...``)."""
        self.field = field
        """The field as a JSON path (``hooks.PreToolUse[0].matcher``), when one is wrong."""


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
    allowed_domains: tuple[str, ...] = ()
    """``sandbox.network.allowedDomains`` of every file (`tools.bash.network`)."""
    denied_domains: tuple[str, ...] = ()
    budgets: dict[str, float] = field(default_factory=dict[str, float])
    """``budgets``: each cap by its name, the lowest any file sets; with `budget_files`,
    the file that set it."""
    budget_files: dict[str, str] = field(default_factory=dict[str, str])
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


def parse_settings_json(file: str, text: str) -> dict[str, object] | SettingsError:
    """A settings file's JSON object (an empty file is an empty one), or what is wrong."""
    try:
        data: object = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return SettingsError(file, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno)
    found = json_object(data)
    if found is None:
        return SettingsError(file, "the settings must be a JSON object", 1)
    return found


def narrowing_part(data: Mapping[str, object]) -> dict[str, object]:
    """The part of a folder's settings that applies before the folder is trusted (see
    `trust`): deny and ask rules, and a mode no wider than `default`. Every other key is
    left out, those a later version may read included."""
    permissions = json_object(data.get("permissions"))
    if permissions is None:
        return {}
    kept = {key: permissions[key] for key in ("deny", "ask") if key in permissions}
    if permissions.get("defaultMode") in NARROWING_MODES:
        kept["defaultMode"] = permissions["defaultMode"]
    return {"permissions": kept} if kept else {}  # hosts widen; its budgets wait for trust too


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

    Each broken part is a problem naming its field, and only that part is left out: a rule
    (not its list), a hook (not its group), a group whose matcher is not a regex, a list or
    section that has the wrong type, the whole ``additionalDirectories`` list (a directory
    list is taken whole or not at all, as it widens what the tools may touch).

    With `ignored` the file is another program's (Claude Code's): its `defaultMode` and
    ``importClaudeCodeSettings`` are not applied, and hook events and hook types this
    package does not have are skipped; each of these is listed in `ignored` rather than
    reported as a problem. With `narrow` (a folder not trusted yet) only its
    `narrowing_part` is read.
    """
    data = parse_settings_json(file, text)
    if isinstance(data, SettingsError):
        settings.problems.append(data)
        return
    if narrow:
        data = narrowing_part(data)
    if ignored is not None:
        data = _foreign_part(data, ignored)
    checked = _checked(data, file, text, settings.problems)
    permissions = checked.permissions
    settings.rules[source] = {
        "allow": tuple(permissions.allow),
        "ask": tuple(permissions.ask),
        "deny": tuple(permissions.deny),
    }
    if permissions.default_mode is not None:
        settings.default_mode = permissions.default_mode
    settings.additional_directories += tuple(permissions.additional_directories)
    network = checked.sandbox.network
    settings.allowed_domains += tuple(network.allowed_domains)
    settings.denied_domains += tuple(network.denied_domains)
    for name, cap in checked.budgets.model_dump(by_alias=True).items():
        if cap is not None and cap < settings.budgets.get(name, float("inf")):
            settings.budgets[name] = cap
            settings.budget_files[name] = file
    settings.hooks += tuple(
        HookSpec(cast("HookEvent", event), group.matcher, hook.command, hook.timeout, file)
        for event, groups in checked.hooks.items()
        for group in groups
        for hook in group.hooks
    )
    if checked.import_claude is not None:
        settings.import_claude = checked.import_claude


_MAX_ROUNDS = 8
"""Checks of one file before giving up on it: each round leaves out every part found broken,
so a second round passes unless a part only shows its problem once its siblings are gone."""


def _checked(
    data: dict[str, object], file: str, text: str, problems: list[SettingsError]
) -> SettingsFileModel:
    """The file as `SettingsFileModel`, its broken parts reported and left out (`_part`)."""
    current: object = data
    for _ in range(_MAX_ROUNDS):
        try:
            return SETTINGS_FILE.validate_python(current)
        except ValidationError as error:
            found = field_problems(error, expected=EXPECTED)
        for problem in found:
            line = line_of(text, problem.loc, value_at(current, problem.loc))
            problems.append(SettingsError(file, str(problem), line, field=problem.path))
        smaller = without(current, {_part(problem.loc) for problem in found})
        if smaller == current:
            break
        current = smaller
    return SettingsFileModel()


def _part(loc: Location) -> Location:
    """The part of a settings file left out for a problem at `loc`."""
    match loc:
        case ("permissions", "additionalDirectories", *_):
            return loc[:2]
        case ("permissions", str(), int(), *_):
            return loc[:3]  # one rule
        case ("sandbox", "network", str(), int(), *_):
            return loc[:4]  # one host
        case ("hooks", str(), int(), "hooks", int(), *_):
            return loc[:5]  # one hook
        case ("hooks", str(), int(), *_):
            return loc[:3]  # one group
        case _:
            return loc[:2]  # a key of a section, or a section


def _foreign_part(data: Mapping[str, object], ignored: list[str]) -> dict[str, object]:
    """Claude Code's file without what this package does not take from it, each part listed
    in `ignored`: its defaultMode, its importClaudeCodeSettings, hooks of other events and
    hooks of other types."""
    kept = {key: value for key, value in data.items() if key != IMPORT_CLAUDE_KEY}
    permissions = json_object(kept.get("permissions"))
    mode = permissions.get("defaultMode") if permissions is not None else None
    if permissions is not None and mode is not None:
        ignored.append(f"defaultMode {mode!r} (the mode is this project's to choose)")
        kept["permissions"] = {k: v for k, v in permissions.items() if k != "defaultMode"}
    hooks = json_object(kept.get("hooks"))
    if hooks is not None:
        ignored.extend(
            f"hooks.{e} (no such hook event here)" for e in hooks if e not in HOOK_EVENTS
        )
        kept["hooks"] = {
            event: _command_hooks(event, groups, ignored)
            for event, groups in hooks.items()
            if event in HOOK_EVENTS
        }
    return kept


def _command_hooks(event: str, groups: object, ignored: list[str]) -> object:
    """An event's groups without the hooks of another type than ``command`` (listed)."""
    listed = json_array(groups)
    if listed is None:
        return groups
    kept: list[object] = []
    for item in listed:
        group = json_object(item)
        entries = json_array(group.get("hooks")) if group is not None else None
        if group is None or entries is None:
            kept.append(item)
            continue
        commands: list[object] = []
        for entry in entries:
            kind = (json_object(entry) or {}).get("type", "command")
            if isinstance(kind, str) and kind != "command":
                ignored.append(f"hooks.{event}: a {kind!r} hook (only command hooks run here)")
            else:
                commands.append(entry)
        kept.append({**group, "hooks": commands})
    return kept
