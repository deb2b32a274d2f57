"""MCP server configuration: the `mcpServers` section of the settings files.

Read from ``~/.toolhost/settings.json`` (user) and ``<cwd>/.toolhost/settings.json``
(project; a server named in both takes the project's entry). Each entry is either stdio
(``command``, ``args``, ``env``, optional ``cwd``) or streamable HTTP (``url``, ``headers``;
``"type": "http"``), with options ``alwaysLoad`` (send its tools in every request instead of
deferring them), ``timeout`` (seconds to connect) and ``toolTimeout`` (seconds per call).
``${VAR}`` and ``${VAR:-default}`` in strings take values from the environment. A bad entry
becomes a clear error for that server; the others still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.errors import ConfigurationError
from ..core.json_values import json_object, json_string_map, json_strings

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 300.0

MAX_CONFIGURED_NAME = 200
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ConfigurationError, ValueError):
    """An `mcpServers` entry that cannot be used, with the reason."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """How to reach one MCP server."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    always_load: bool = False
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    source: str | None = None
    """The settings file the entry came from (None when added at run time)."""
    trust_annotations: bool = False
    """``"trustAnnotations": true``: the server's ``readOnlyHint`` may let a read-only call
    run without asking, as a read-only built-in tool does. Off by default: the MCP
    specification says clients must treat annotations as untrusted unless the server is."""

    @classmethod
    def stdio(cls, name: str, command: str, *args: str, **options: Any) -> McpServerConfig:
        """A stdio server, as `%agent mcp add NAME -- COMMAND ARGS` makes one."""
        check_server_name(name)
        return cls(name=name, transport="stdio", command=command, args=tuple(args), **options)


def check_server_name(name: str) -> str:
    """A server name: any non-empty text without control characters. One that would make
    tool names ambiguous or invalid (``files_``, ``a__b``, ``my.db``) is renamed for its
    tools and rules, with a notice (`naming.server_names`), not refused."""
    if not name.strip() or len(name) > MAX_CONFIGURED_NAME or any(c < " " for c in name):
        raise McpConfigError(
            f"MCP server name {name!r} must be 1-{MAX_CONFIGURED_NAME} characters without "
            "control characters"
        )
    return name


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}``; an unset variable without default is an error."""
    env = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise McpConfigError(f"environment variable {name} is not set (used as ${{{name}}})")

    return _ENV_REF.sub(replace, value)


def _strings(raw: object, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    strings = json_strings(raw)
    if strings is None:
        raise McpConfigError(f"{what} must be a list of strings")
    return tuple(expand_env(item) for item in strings)


def _mapping(raw: object, what: str) -> dict[str, str]:
    if raw is None:
        return {}
    strings = json_string_map(raw)
    if strings is None:
        raise McpConfigError(f"{what} must be an object of strings")
    return {key: expand_env(value) for key, value in strings.items()}


def _seconds(raw: object, what: str, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        raise McpConfigError(f"{what} must be a positive number of seconds")
    return float(raw)


def parse_server_config(name: str, raw: object, *, source: str | None = None) -> McpServerConfig:
    """One `mcpServers` entry; raises `McpConfigError` saying what is wrong."""
    check_server_name(name)
    entry = json_object(raw)
    if entry is None:
        raise McpConfigError(f"mcpServers.{name} must be an object")
    kind = entry.get("type")
    if kind is None:
        kind = "http" if "url" in entry else "stdio"
    if kind in ("http", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"mcpServers.{name}: an http server needs a 'url'")
        transport: Literal["stdio", "http"] = "http"
        command, args, env, cwd = None, (), {}, None
        url = expand_env(url)
    elif kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise McpConfigError(f"mcpServers.{name}: a stdio server needs a 'command'")
        transport = "stdio"
        command = expand_env(command)
        args = _strings(entry.get("args"), f"mcpServers.{name}.args")
        env = _mapping(entry.get("env"), f"mcpServers.{name}.env")
        cwd = entry.get("cwd")
        cwd = expand_env(cwd) if isinstance(cwd, str) else None
        url = None
    else:
        raise McpConfigError(
            f"mcpServers.{name}: unknown type {kind!r} (use 'stdio' or 'http'; "
            "the older SSE transport is not supported)"
        )
    return McpServerConfig(
        name=name,
        transport=transport,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=_mapping(entry.get("headers"), f"mcpServers.{name}.headers"),
        always_load=bool(entry.get("alwaysLoad", False)),
        connect_timeout=_seconds(
            entry.get("timeout"), f"mcpServers.{name}.timeout", DEFAULT_CONNECT_TIMEOUT
        ),
        tool_timeout=_seconds(
            entry.get("toolTimeout"), f"mcpServers.{name}.toolTimeout", DEFAULT_TOOL_TIMEOUT
        ),
        source=source,
        trust_annotations=_flag(
            entry.get("trustAnnotations"), f"mcpServers.{name}.trustAnnotations"
        ),
    )


def _flag(raw: object, what: str) -> bool:
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise McpConfigError(f"{what} must be true or false")
    return raw


@dataclass(frozen=True, slots=True)
class McpConfigs:
    """The servers the settings describe, and the entries that could not be used."""

    servers: dict[str, McpServerConfig]
    errors: dict[str, str]
    """Server name (or file path for an unreadable file) → what is wrong."""


def settings_paths(
    cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None
) -> list[Path]:
    """The settings files that may hold `mcpServers`, lowest precedence first."""
    user_home = Path(home) if home is not None else Path.home()
    return [user_home / ".toolhost" / "settings.json", Path(cwd) / ".toolhost" / "settings.json"]


def load_mcp_configs(
    cwd: str | os.PathLike[str],
    *,
    home: str | os.PathLike[str] | None = None,
    trusted: bool = True,
) -> McpConfigs:
    """Read `mcpServers` from the user and project settings files (the user's only, when
    the folder is not `trusted`: a folder's servers start once a person trusts it)."""
    servers: dict[str, McpServerConfig] = {}
    errors: dict[str, str] = {}
    paths = settings_paths(cwd, home)
    for path in paths if trusted else paths[:1]:
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            errors[str(path)] = f"cannot read {path}: {exc}"
            continue
        settings = json_object(data)
        section = settings.get("mcpServers") if settings is not None else None
        if section is None:
            continue
        entries = json_object(section)
        if entries is None:
            errors[str(path)] = f"{path}: mcpServers must be an object"
            continue
        for name, raw in entries.items():
            try:
                servers[name] = parse_server_config(name, raw, source=str(path))
                errors.pop(name, None)
            except McpConfigError as exc:
                servers.pop(name, None)
                errors[name] = f"{exc} ({path})"
    return McpConfigs(servers, errors)
