"""Folder trust: a folder's own settings run nothing and widen nothing until a person trusts it.

A cloned repository can hold ``.toolhost/settings.json`` (and ``settings.local.json``, and
Claude Code's ``.claude/settings*.json`` when those are imported). Read as they are, they
would run their hooks on the first prompt, start their ``mcpServers`` commands and apply
``defaultMode: bypassPermissions`` with ``allow: ["Bash"]`` before anyone looked at them.
So the folder's files are split in two (`narrowing_part`):

- what only narrows applies at once: ``permissions.deny`` and ``permissions.ask``, and a
  ``defaultMode`` of ``plan`` or ``dontAsk`` (both ask or do less than ``default``);
- everything else (hooks, MCP servers, allow rules, a wider ``defaultMode``,
  ``additionalDirectories``, ``importClaudeCodeSettings``) waits until the folder is
  trusted. Keys this version does not read (``env``, ``apiKeyHelper``...) act in neither
  case, so they are not asked about; the narrowing part keeps only the known narrowing keys
  (instead of removing known wide ones), so a key read by a later version waits too.

User-level settings (``~/.toolhost/settings.json``) are the person's own and always apply.

**What counts as one folder.** Trust is kept per folder, as its resolved absolute path
(symlinks followed once, when the session starts), and matched exactly: trusting ``/a``
does not trust ``/a/b``, since a repository cloned into a trusted folder later is new
code. Claude Code walks up to a trusted parent only to decide whether to show its dialog;
the check that loads a project's allow rules and MCP servers matches the folder exactly
(anthropics/claude-code#72896, #79612), so the two agree where it matters. A stored path is
compared as written, never resolved again: a trusted path later replaced by a symlink to
another folder does not lend its trust to that folder. The person's home folder is
trusted: its ``.toolhost/`` is the user-level folder itself.

**What is kept.** A "Trust" answer is written to ``~/.toolhost/trusted-folders.json`` in
Claude Code's shape (``{"projects": {"<folder>": {"hasTrustDialogAccepted": true,
"trustedActions": [...]}}}``, the actions being the lines the person was shown). The file is
under ``~/.toolhost/``, a protected folder: the agent's own writes there are asked in every
mode and are read-only in the Bash sandbox. ``"trustedFolders": ["/path", ...]`` in the
user's ``~/.toolhost/settings.json`` trusts folders by hand (for headless runs); the same key
in a project's own file is ignored.

**Settings that change after trust.** A session never applies a file changed while it runs
(`settings_watch`). A new session compares the folder's actions with those trusted: when it
would run or allow something the person was not shown (a hook or server that a ``git pull``
brought in, say), the folder is asked about again, the new lines marked; removed lines need
nothing. Claude Code applies such changes silently; a new command that runs with the
person's rights is worth one more click. Folders in ``trustedFolders`` are trusted whatever
they hold: the person chose that.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ...core.json_values import json_array, json_object
from ...core.private import private_folder
from .settings_file import IMPORT_CLAUDE_KEY, NARROWING_MODES, SettingsError, parse_settings_json
from .settings_file import narrowing_part as narrowing_part

TRUST_FILE = "trusted-folders.json"
"""The file, in ``~/.toolhost/``, that keeps the folders a person trusted."""
TRUSTED_FOLDERS_KEY = "trustedFolders"
"""The user-level settings key that lists folders trusted by hand."""

How: TypeAlias = Literal[
    "nothing to trust", "home", "stored", "setting", "flag", "clicked", "declined", "not asked"
]
"""Why a folder is (or is not) trusted."""


@dataclass(frozen=True, slots=True)
class FolderTrust:
    """Whether a session's folder is trusted, why, and what its settings would do."""

    folder: Path
    trusted: bool
    how: How
    actions: tuple[str, ...] = ()
    """Everything the folder's own settings would run or widen, one line each."""
    new: tuple[str, ...] = ()
    """The actions not among those trusted before (all of them for a folder never trusted)."""

    @property
    def held_back(self) -> tuple[str, ...]:
        """What this session does not apply: every action while the folder is untrusted."""
        return () if self.trusted else self.actions

    @property
    def undecided(self) -> bool:
        """Nobody has answered for this folder and it has something to hold back."""
        return not self.trusted and self.how == "not asked" and bool(self.actions)

    def summary(self) -> str:
        """One line for ``%agent status``: trusted or not, why, and how much is held back."""
        if self.how == "nothing to trust":
            return "nothing to trust (the folder's settings only narrow, or there are none)"
        if self.trusted:
            why = {
                "home": "your home folder",
                "stored": f"trusted before (~/.toolhost/{TRUST_FILE})",
                "setting": f"listed in {TRUSTED_FOLDERS_KEY} (~/.toolhost/settings.json)",
                "flag": "trusted for this session (--trust-folder)",
                "clicked": "trusted by you",
            }.get(self.how, self.how)
            return f"trusted: {why}"
        why = {"declined": "you did not trust it", "not asked": "not asked yet"}.get(
            self.how, self.how
        )
        held = "; ".join(self.actions) or "nothing (its settings only narrow)"
        return f"not trusted ({why}); held back: {held}"


def toolhost_user_folder(home: str | os.PathLike[str] | None = None) -> Path:
    """``~/.toolhost``: the person's own settings and the trust store."""
    return (Path(home) if home is not None else Path.home()) / ".toolhost"


def trust_file(home: str | os.PathLike[str] | None = None) -> Path:
    """Where trust answers are kept: ``~/.toolhost/trusted-folders.json``."""
    return toolhost_user_folder(home) / TRUST_FILE


def folder_files(cwd: str | os.PathLike[str], *, claude: bool) -> list[Path]:
    """The folder's own settings files (``.toolhost/``, and ``.claude/`` when `claude`)."""
    folder = Path(cwd)
    names = [".toolhost/settings.json", ".toolhost/settings.local.json"]
    if claude:
        names += [".claude/settings.json", ".claude/settings.local.json"]
    return [folder / name for name in names]


def folder_actions(
    cwd: str | os.PathLike[str],
    *,
    home: str | os.PathLike[str] | None = None,
    import_claude: bool | None = None,
) -> tuple[str, ...]:
    """What the folder's own settings would run or widen, one line each, in file order.

    Claude Code's files of the folder count too when `import_claude` says so (None: when the
    user's own ``importClaudeCodeSettings`` is true); a folder's own
    ``importClaudeCodeSettings: true`` is an action itself, and brings those files in.
    """
    if is_home(cwd, home):
        return ()
    lines: list[str] = []
    own = folder_files(cwd, claude=False)
    if import_claude is None:
        import_claude = _data(toolhost_user_folder(home) / "settings.json").get(IMPORT_CLAUDE_KEY)
    claude = import_claude is True or any(_data(p).get(IMPORT_CLAUDE_KEY) is True for p in own)
    for path in folder_files(cwd, claude=claude):
        data = _data(path)
        if data:
            lines += _actions_of(data, str(path.relative_to(cwd)))
    return tuple(dict.fromkeys(lines))


def is_home(cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> bool:
    """The folder is the person's home, whose ``.toolhost/`` is the user-level folder."""
    user = Path(home) if home is not None else Path.home()
    try:
        return Path(cwd).resolve() == user.resolve()
    except OSError:
        return False


def user_trusted_folders(home: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """``trustedFolders`` from the user's own ``~/.toolhost/settings.json`` (``~`` expanded)."""
    data = _data(toolhost_user_folder(home) / "settings.json")
    listed = json_array(data.get(TRUSTED_FOLDERS_KEY))
    if listed is None:
        return ()
    user = Path(home) if home is not None else Path.home()
    found: list[str] = []
    for item in listed:
        if isinstance(item, str) and item.strip():
            text = item.strip()
            if text == "~" or text.startswith("~/"):
                text = str(user / text[2:]) if text != "~" else str(user)
            found.append(os.path.normpath(text))
    return tuple(found)


def stored_actions(folder: Path, home: str | os.PathLike[str] | None = None) -> set[str] | None:
    """The actions trusted for `folder` (matched exactly), or None when it was never trusted."""
    projects = json_object(_data(trust_file(home)).get("projects")) or {}
    entry = json_object(projects.get(str(folder)))
    if entry is None or entry.get("hasTrustDialogAccepted") is not True:
        return None
    listed = json_array(entry.get("trustedActions")) or []
    return {item for item in listed if isinstance(item, str)}


def folder_trust(
    cwd: str | os.PathLike[str],
    *,
    home: str | os.PathLike[str] | None = None,
    decided: bool | None = None,
    import_claude: bool | None = None,
) -> FolderTrust:
    """Whether the folder `cwd` is trusted now.

    `decided` is an answer given for this session (True: ``--trust-folder`` or a click; False:
    "Don't trust"); None leaves it to the home folder, ``trustedFolders`` and the store.
    """
    folder = Path(cwd).resolve()
    actions = folder_actions(folder, home=home, import_claude=import_claude)
    if decided is not None and not is_home(folder, home):
        how: How = "flag" if decided else "declined"
        return FolderTrust(folder, decided, how, actions, actions)
    if not actions:
        return FolderTrust(folder, True, "home" if is_home(folder, home) else "nothing to trust")
    if str(folder) in user_trusted_folders(home):
        return FolderTrust(folder, True, "setting", actions)
    known = stored_actions(folder, home)
    if known is not None:
        new = tuple(a for a in actions if a not in known)
        if not new:
            return FolderTrust(folder, True, "stored", actions)
        return FolderTrust(folder, False, "not asked", actions, new)
    return FolderTrust(folder, False, "not asked", actions, actions)


def remember_trust(trust: FolderTrust, *, home: str | os.PathLike[str] | None = None) -> Path:
    """Keep a person's "Trust" for `trust.folder` with the actions they were shown (added to
    any trusted before); returns the store. Written whole to a new file, then renamed."""
    path = trust_file(home)
    data = _data(path)
    projects = json_object(data.get("projects"))
    if projects is None:
        projects = data["projects"] = {}
    entry = json_object(projects.get(str(trust.folder))) or {}
    before = [a for a in (json_array(entry.get("trustedActions")) or []) if isinstance(a, str)]
    entry["hasTrustDialogAccepted"] = True
    entry["trustedActions"] = list(dict.fromkeys([*before, *trust.actions]))
    projects[str(trust.folder)] = entry
    private_folder(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".trust-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(temporary, path)
    return path


def file_actions(path: Path, name: str) -> list[str]:
    """What one settings file would run or widen (`folder_actions`' lines), named `name`."""
    data = _data(path)
    return _actions_of(data, name) if data else []


def _data(path: Path) -> dict[str, Any]:
    """A settings-like file's JSON object; {} when it is missing, unreadable or broken (a
    broken file is reported where settings are loaded)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    parsed = parse_settings_json(str(path), text)
    return {} if isinstance(parsed, SettingsError) else dict(parsed)


def _actions_of(data: Mapping[str, Any], file: str) -> list[str]:
    """The lines `folder_actions` lists for one file's data."""
    lines: list[str] = []
    hooks = json_object(data.get("hooks")) or {}
    for event, groups in hooks.items():
        for group in json_array(groups) or []:
            entry = json_object(group) or {}
            matcher = entry.get("matcher", "")
            for hook in json_array(entry.get("hooks")) or []:
                command = (json_object(hook) or {}).get("command")
                where = f" for {matcher}" if isinstance(matcher, str) and matcher else ""
                lines.append(f"runs the {event} hook{where}: {command} ({file})")
    servers = json_object(data.get("mcpServers")) or {}
    for name, raw in servers.items():
        lines.append(f"starts MCP server {name}: {_server_text(raw)} ({file})")
    permissions = json_object(data.get("permissions")) or {}
    mode = permissions.get("defaultMode")
    if mode is not None and mode not in NARROWING_MODES:
        lines.append(f"sets the permission mode to {mode} ({file})")
    for rule in json_array(permissions.get("allow")) or []:
        lines.append(f"allows {rule} without asking ({file})")
    for directory in json_array(permissions.get("additionalDirectories")) or []:
        lines.append(f"adds the working directory {directory} ({file})")
    if data.get("importClaudeCodeSettings") is True:
        lines.append(f"reads Claude Code's settings files of this folder ({file})")
    return lines


def _server_text(raw: object) -> str:
    """A server entry as the command line it runs, or the URL it connects to."""
    entry = json_object(raw) or {}
    if isinstance(entry.get("url"), str):
        return f"connects to {entry['url']}"
    args = [str(a) for a in (json_array(entry.get("args")) or [])]
    return " ".join([str(entry.get("command")), *args])


def describe(actions: Iterable[str], new: Iterable[str] = ()) -> list[str]:
    """The lines a trust question shows, those not trusted before marked ``(new)``."""
    fresh = set(new)
    return [f"{line} (new)" if fresh and line in fresh else line for line in actions]
