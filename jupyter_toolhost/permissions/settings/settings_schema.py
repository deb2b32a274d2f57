"""What a settings file may say, as pydantic types, and the words for each field.

The keys read here are Claude Code's (``permissions.allow``/``ask``/``deny``,
``defaultMode``, ``additionalDirectories``, ``hooks``) plus this package's
``importClaudeCodeSettings``; every other key (``env``, ``model``, ``mcpServers``, which
`mcp.config` reads...) is ignored, as Claude Code ignores keys it does not know. Values are
checked strictly, as JSON: ``"5"`` is not a number of seconds and ``"yes"`` is not true.
`EXPECTED` holds the words a problem shows for what belongs at each place.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticCustomError

from ...core.types import PERMISSION_MODES, PermissionMode
from ...hooks.hooks import DEFAULT_HOOK_TIMEOUT, HOOK_EVENTS
from ..rules.rules import RuleError, parse_rule

IMPORT_CLAUDE_KEY = "importClaudeCodeSettings"
"""The settings key that reads Claude Code's settings files as extra scopes (off by default)."""


def _rule(text: str) -> str:
    try:
        parse_rule(text)
    except RuleError as exc:
        raise PydanticCustomError("rule", "{reason}", {"reason": str(exc)}) from None
    return text


def _matcher(text: str) -> str:
    try:
        re.compile("" if text == "*" else text)  # "*" matches every tool
    except re.error as exc:
        raise PydanticCustomError(
            "matcher",
            '{matcher} is not a valid regex ({reason}); write a tool name such as "Bash", '
            'alternatives such as "Edit|Write", or "*" for every tool',
            {"matcher": repr(text), "reason": str(exc)},
        ) from None
    return text


def _event(name: str) -> str:
    if name not in HOOK_EVENTS:
        raise PydanticCustomError(
            "hook_event",
            "unknown hook event {event}; expected one of {events}",
            {"event": repr(name), "events": ", ".join(HOOK_EVENTS)},
        )
    return name


def _command(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError(
            "command", "a hook needs a non-empty 'command' string: the shell command to run", {}
        )
    return text


Rule = Annotated[str, AfterValidator(_rule)]
Seconds = Annotated[float, Field(gt=0)]


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class HookCommand(_Section):
    """One ``{"type": "command", "command": ..., "timeout": ...}`` of a hook group."""

    type: Literal["command"] = "command"
    command: Annotated[str, AfterValidator(_command)]
    timeout: Seconds = DEFAULT_HOOK_TIMEOUT


class HookGroup(_Section):
    """``{"matcher": ..., "hooks": [...]}``: commands run for the tools the matcher names."""

    matcher: Annotated[str, AfterValidator(_matcher)] = ""
    hooks: list[HookCommand]


class PermissionsSection(_Section):
    """``permissions``: rules, the mode, and more working directories."""

    allow: list[Rule] = []
    ask: list[Rule] = []
    deny: list[Rule] = []
    default_mode: PermissionMode | None = Field(default=None, alias="defaultMode")
    additional_directories: list[str] = Field(default=[], alias="additionalDirectories")


class NetworkSection(_Section):
    """``sandbox.network``: the hosts Bash's sandbox reaches through the kernel's proxy."""

    allowed_domains: list[str] = Field(default=[], alias="allowedDomains")
    denied_domains: list[str] = Field(default=[], alias="deniedDomains")


class SandboxSection(_Section):
    """``sandbox``: what this package reads of it (the network allow-list)."""

    network: NetworkSection = NetworkSection()


class BudgetsSection(_Section):
    """``budgets``: the user's own caps (`agent.budget`); the policy's lower ones win."""

    cell_usd: Annotated[float, Field(ge=0)] | None = Field(default=None, alias="cellUsd")
    session_usd: Annotated[float, Field(ge=0)] | None = Field(default=None, alias="sessionUsd")
    day_usd: Annotated[float, Field(ge=0)] | None = Field(default=None, alias="dayUsd")
    cell_tokens: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="cellTokens")
    session_tokens: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="sessionTokens")
    day_tokens: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="dayTokens")


class SettingsFileModel(_Section):
    """A whole settings file, as far as this package reads it."""

    permissions: PermissionsSection = PermissionsSection()
    sandbox: SandboxSection = SandboxSection()
    budgets: BudgetsSection = BudgetsSection()
    hooks: dict[Annotated[str, AfterValidator(_event)], list[HookGroup]] = {}
    """Hook event (one of `HOOK_EVENTS`) -> its groups."""
    import_claude: bool | None = Field(default=None, alias=IMPORT_CLAUDE_KEY)


SETTINGS_FILE = TypeAdapter(SettingsFileModel)

_MODES = ", ".join(PERMISSION_MODES)
_HOOK = '{"type": "command", "command": "<shell command>"}'
EXPECTED = {
    "permissions": 'an object such as {"allow": [...], "deny": [...]}',
    "permissions.*": 'a list of rule strings such as ["Bash(npm test)", "Read(./src/**)"]',
    "permissions.*[*]": 'a rule string such as "Bash(npm test)" or "Read(./src/**)"',
    "permissions.defaultMode": f"one of {_MODES}",
    "permissions.additionalDirectories": 'a list of paths such as ["../data"]',
    "permissions.additionalDirectories[*]": 'a path string such as "../data"',
    "hooks": f"an object of hook events ({', '.join(HOOK_EVENTS)}) to lists of hook groups",
    "hooks.*": f'a list of hook groups such as [{{"matcher": "Bash", "hooks": [{_HOOK}]}}]',
    "hooks.*[*]": f'a hook group such as {{"matcher": "Bash", "hooks": [{_HOOK}]}}',
    "hooks.*[*].matcher": 'a regex of tool names such as "Bash" or "Edit|Write"',
    "hooks.*[*].hooks": f"a list of hooks such as [{_HOOK}]",
    "hooks.*[*].hooks[*]": f"a hook such as {_HOOK}",
    "hooks.*[*].hooks[*].type": '"command" (the only hook type that runs here)',
    "hooks.*[*].hooks[*].command": "a non-empty shell command string",
    "hooks.*[*].hooks[*].timeout": "a positive number of seconds",
    IMPORT_CLAUDE_KEY: "true or false",
    "sandbox": 'an object such as {"network": {"allowedDomains": ["pypi.org"]}}',
    "sandbox.network": 'an object such as {"allowedDomains": ["pypi.org"]}',
    "sandbox.network.*": 'a list of hosts such as ["pypi.org", "*.pythonhosted.org"]',
    "sandbox.network.*[*]": 'a host such as "pypi.org", "*.pythonhosted.org" or "10.0.0.5:8080"',
    "budgets": 'an object such as {"cellUsd": 0.5, "dayTokens": 2000000}',
    "budgets.*": "a number, zero or more (dollars for *Usd, whole tokens for *Tokens)",
}
"""What belongs at each place of a settings file, in the words a problem shows."""
