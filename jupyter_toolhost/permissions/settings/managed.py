"""Managed settings: a policy above the user, for a hub or a lab machine.

Where it is read from, both when present:

1. ``/etc/jupyter_toolhost/managed-settings.json`` (`SYSTEM_FILE`), which only an
   administrator can write;
2. the file ``JUPYTER_TOOLHOST_MANAGED_SETTINGS`` names (`ENV`), which a hub sets in the
   environment its spawner passes to each user's server.

The second can only add restrictions to the first: deny and ask rules add up (its allow
rules are ignored), a forbidden mode stays forbidden, a required sandbox stays required, the
model and domain lists intersect and the lower budget wins. A user who changes or unsets
the variable in their own kernel loses nothing but what the hub added (and gains nothing,
even pointing it at a file of their own); the system file still holds. Both outrank the
user's, the project's and the cell's settings (docs/classroom.md has the order).

What a policy may say, in Claude Code's field names where the meaning is the same:

- ``permissions.deny`` / ``permissions.ask`` / ``permissions.allow``: rules of the source
  ``managed``; a deny or ask here is one nothing else removes;
- ``permissions.disableBypassPermissionsMode: "disable"`` and
  ``permissions.disableAutoMode: "disable"``: those modes are refused, wherever they are
  asked for (a cell option, a settings file, ``%agent mode``), with a message naming the
  policy file;
- ``allowManagedPermissionRulesOnly: true``: allow rules of every other source are ignored;
- ``sandbox.enabled: true``: Bash runs only in the sandbox (a command is refused where
  bubblewrap cannot start); ``sandbox.network.allowedDomains`` / ``deniedDomains``: the
  sandbox's network allow-list (the user's lists can only narrow it);
- ``availableModels``: the models a cell may use;
- ``budgets``: caps in US dollars at list prices or in tokens, per cell, per session and per
  user per day (see `Budgets`); a user's own budgets apply too, the lower wins.

A policy file that exists but cannot be read or holds a wrong field fails closed: every
agent cell stops before sending anything, with the file, the field and what to fix, for the
person who runs the hub.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.types import PermissionMode

SYSTEM_FILE = Path("/etc/jupyter_toolhost/managed-settings.json")
ENV = "JUPYTER_TOOLHOST_MANAGED_SETTINGS"
SOURCE = "managed"
"""The rule source of the policy's rules (shown in `%agent rules` and in reasons)."""

__all__ = ["ENV", "SOURCE", "SYSTEM_FILE", "Budgets", "Policy", "load_policy", "policy_files"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Budgets(_Model):
    """Caps, each optional: dollars at list prices (``*Usd``) or tokens (``*Tokens``)."""

    cell_usd: float | None = Field(default=None, alias="cellUsd", ge=0)
    session_usd: float | None = Field(default=None, alias="sessionUsd", ge=0)
    day_usd: float | None = Field(default=None, alias="dayUsd", ge=0)
    cell_tokens: int | None = Field(default=None, alias="cellTokens", ge=0)
    session_tokens: int | None = Field(default=None, alias="sessionTokens", ge=0)
    day_tokens: int | None = Field(default=None, alias="dayTokens", ge=0)

    def lowest(self, other: Budgets) -> Budgets:
        """Each cap the lower of the two (a cap set on one side only is kept)."""
        merged: dict[str, Any] = {}
        for name in type(self).model_fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            values = [v for v in (mine, theirs) if v is not None]
            merged[name] = min(values) if values else None
        return Budgets.model_validate(merged)

    def caps(self) -> dict[str, float | int]:
        """The caps that are set, by their settings name."""
        dumped = self.model_dump(by_alias=True)
        return {name: value for name, value in dumped.items() if value is not None}


class _Permissions(_Model):
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    disable_bypass: Literal["disable"] | None = Field(
        default=None, alias="disableBypassPermissionsMode"
    )
    disable_auto: Literal["disable"] | None = Field(default=None, alias="disableAutoMode")


class _Network(_Model):
    allowed_domains: tuple[str, ...] | None = Field(default=None, alias="allowedDomains")
    denied_domains: tuple[str, ...] = Field(default=(), alias="deniedDomains")


class _Sandbox(_Model):
    enabled: bool | None = None
    network: _Network = _Network()


class _File(_Model):
    permissions: _Permissions = _Permissions()
    managed_rules_only: bool = Field(default=False, alias="allowManagedPermissionRulesOnly")
    sandbox: _Sandbox = _Sandbox()
    available_models: tuple[str, ...] | None = Field(default=None, alias="availableModels")
    budgets: Budgets = Budgets()


@dataclass(frozen=True, slots=True)
class Policy:
    """The managed settings in force (empty when no file exists)."""

    files: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    forbidden_modes: Mapping[PermissionMode, str] = field(default_factory=dict[PermissionMode, str])
    """Each refused mode → the file that refuses it."""
    managed_rules_only: bool = False
    require_sandbox: bool = False
    allowed_domains: tuple[str, ...] | None = None
    denied_domains: tuple[str, ...] = ()
    models: tuple[str, ...] | None = None
    budgets: Budgets = field(default_factory=lambda: Budgets())
    broken: str | None = None
    """Why a policy file could not be read: every agent cell stops (fail closed)."""

    @property
    def active(self) -> bool:
        return bool(self.files) or self.broken is not None

    def refuse_mode(self, mode: str) -> str | None:
        """Why `mode` may not be used here (None when it may)."""
        file = self.forbidden_modes.get(mode)  # type: ignore[call-overload]
        if file is None:
            return None
        return (
            f"The policy in {file} forbids the {mode} mode here; the cell kept its mode. "
            "Ask whoever runs this server if you need it."
        )

    def refuse_model(self, model: str) -> str | None:
        """Why `model` may not be used here (None when it may)."""
        if self.models is None or model in self.models:
            return None
        allowed = ", ".join(self.models) or "none"
        return (
            f"The policy in {self.files[-1]} allows only these models: {allowed}; {model!r} was "
            "not used. Choose one of them with --model."
        )

    def summary(self) -> list[str]:
        """What `%agent status` says about the policy: one line per restriction."""
        if self.broken is not None:
            return [f"policy: {self.broken}"]
        if not self.files:
            return []
        lines = [f"policy in force: {', '.join(self.files)}"]
        if self.forbidden_modes:
            lines.append("  forbidden modes: " + ", ".join(sorted(self.forbidden_modes)))
        counts = ", ".join(
            f"{len(rules)} {name}"
            for name, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow))
        )
        lines.append(
            f"  rules: {counts}" + (" (only these allow)" if self.managed_rules_only else "")
        )
        if self.require_sandbox:
            lines.append("  the Bash sandbox is required")
        if self.allowed_domains is not None:
            lines.append(f"  sandbox network: {len(self.allowed_domains)} allowed domains")
        if self.models is not None:
            lines.append(f"  models: {', '.join(self.models) or 'none'}")
        caps = self.budgets.caps()
        if caps:
            lines.append("  budgets: " + ", ".join(f"{k} {v:g}" for k, v in caps.items()))
        return lines


def policy_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The policy files to read, the system one first."""
    environ = os.environ if environ is None else environ
    files = [SYSTEM_FILE]
    named = environ.get(ENV, "").strip()
    if named:
        files.append(Path(named).expanduser())
    return files


def load_policy(files: Iterable[Path] | None = None) -> Policy:
    """The policy of `files` (default `policy_files`) that exist, merged as the module
    docstring says; a broken one gives a `Policy` with `broken` set."""
    policy = Policy()
    for index, path in enumerate(policy_files() if files is None else files):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            return Policy(files=(str(path),), broken=f"{path} cannot be read ({exc.strerror})")
        try:
            data = _File.model_validate(json.loads(text))
        except json.JSONDecodeError as exc:
            return Policy(
                files=(str(path),),
                broken=f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); no agent cell runs "
                "until it is fixed",
            )
        except ValidationError as exc:
            return Policy(files=(str(path),), broken=_explained(path, exc))
        policy = _merged(policy, str(path), data, first=index == 0)
    return policy


def _explained(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the file"
    return f"{path}: {where}: {first['msg']}; no agent cell runs until the policy file is fixed"


def _merged(policy: Policy, file: str, data: _File, *, first: bool) -> Policy:
    """`policy` with one more file's; only the system file (the first) may add allow rules."""
    forbidden: dict[PermissionMode, str] = dict(policy.forbidden_modes)
    if data.permissions.disable_bypass == "disable":
        forbidden.setdefault("bypassPermissions", file)
    if data.permissions.disable_auto == "disable":
        forbidden.setdefault("auto", file)
    models = data.available_models
    if policy.models is not None:
        models = policy.models if models is None else tuple(m for m in policy.models if m in models)
    allowed = data.sandbox.network.allowed_domains
    if policy.allowed_domains is not None:
        allowed = (
            policy.allowed_domains
            if allowed is None
            else tuple(d for d in policy.allowed_domains if d in allowed)
        )
    return Policy(
        files=(*policy.files, file),
        allow=(*policy.allow, *(data.permissions.allow if first else ())),
        ask=(*policy.ask, *data.permissions.ask),
        deny=(*policy.deny, *data.permissions.deny),
        forbidden_modes=forbidden,
        managed_rules_only=policy.managed_rules_only or data.managed_rules_only,
        require_sandbox=policy.require_sandbox or data.sandbox.enabled is True,
        allowed_domains=allowed,
        denied_domains=(*policy.denied_domains, *data.sandbox.network.denied_domains),
        models=models,
        budgets=policy.budgets.lowest(data.budgets),
    )
