"""MCP server configuration: the `mcpServers` section of the settings files.

Read from ``~/.toolhost/settings.json`` (user) and ``<cwd>/.toolhost/settings.json``
(project; a server named in both takes the project's entry). Each entry is either stdio
(``command``, ``args``, ``env``, optional ``cwd``) or streamable HTTP (``url``, ``headers``;
``"type": "http"``), with options ``alwaysLoad`` (send its tools in every request instead of
deferring them), ``timeout`` (seconds to connect) and ``toolTimeout`` (seconds per call).
``${VAR}`` and ``${VAR:-default}`` in strings take values from the environment. Entries are
checked against pydantic types (`_StdioEntry`, `_HttpEntry`), as JSON: ``"5"`` is not a number
of seconds. A bad entry becomes an error for that server naming the file and each field that is
wrong (``mcpServers.db.args[1]: must be a string, not the number 3``); the others still load.
Unknown keys are ignored, as Claude Code ignores them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from ..core.errors import ConfigurationError
from ..core.json_checks import FieldProblem, Location, describe_value, field_problems
from ..core.json_values import json_object

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 300.0

MAX_CONFIGURED_NAME = 200
_K = TypeVar("_K", str, int)
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


def _server_type(kind: str) -> str:
    if kind not in _HTTP_TYPES and kind != "stdio":
        raise PydanticCustomError(
            "server_type",
            "unknown type {kind} (use 'stdio' or 'http'; the older SSE transport is not supported)",
            {"kind": repr(kind)},
        )
    return kind


def _text_or_nothing(value: object) -> object:
    """A `cwd` that is not text has always been left out (the server starts in the kernel's
    folder), not refused."""
    return value if isinstance(value, str) else None


_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")
_Seconds = Annotated[float, Field(gt=0)]
_TO_START = 'the program to start, such as "uvx" or "npx"'
_URL = 'the server\'s URL, such as "https://example.com/mcp"'


class _Entry(BaseModel):
    """What every `mcpServers` entry may say (checked as JSON: ``"5"`` is not a number)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    type: Annotated[str, AfterValidator(_server_type)] | None = None
    headers: dict[str, str] | None = None
    always_load: Annotated[bool, BeforeValidator(bool)] = Field(False, alias="alwaysLoad")
    """Any value is read for its truth, as it always was (``1`` and ``"yes"`` are true)."""
    timeout: _Seconds | None = None
    tool_timeout: _Seconds | None = Field(None, alias="toolTimeout")
    trust_annotations: bool | None = Field(None, alias="trustAnnotations")


class _StdioEntry(_Entry):
    """A server started as a process, spoken to over its stdin and stdout."""

    command: str = ""
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: Annotated[str | None, BeforeValidator(_text_or_nothing)] = None


class _HttpEntry(_Entry):
    """A server reached over streamable HTTP (its other keys are not read)."""

    url: str = ""


_STDIO = TypeAdapter(_StdioEntry)
_HTTP = TypeAdapter(_HttpEntry)
_EXPECTED = {
    "": 'an object such as {"command": "uvx", "args": ["mcp-server-git"]} or '
    '{"type": "http", "url": "https://example.com/mcp"}',
    "type": '"stdio" or "http"',
    "command": _TO_START,
    "args": 'a list of strings such as ["-y", "some-server"]',
    "args[*]": "a string",
    "env": 'an object of strings such as {"LOG_LEVEL": "debug"}',
    "env.*": "a string",
    "url": _URL,
    "headers": 'an object of strings such as {"Authorization": "Bearer ${TOKEN}"}',
    "headers.*": "a string",
    "timeout": "a positive number of seconds",
    "toolTimeout": "a positive number of seconds",
    "trustAnnotations": "true or false",
}
"""What belongs in each field of an entry, in the words a problem shows."""


def parse_server_config(name: str, raw: object, *, source: str | None = None) -> McpServerConfig:
    """One `mcpServers` entry; raises `McpConfigError` naming each field that is wrong
    (``mcpServers.db.args[1]: must be a string, not the number 3``) and what to write."""
    check_server_name(name)
    at: Location = ("mcpServers", name)
    entry = json_object(raw)
    kind = entry.get("type") if entry is not None else None
    if kind is None and entry is not None:
        kind = "http" if "url" in entry else "stdio"
    try:
        checked = (_HTTP if kind in _HTTP_TYPES else _STDIO).validate_python(raw)
    except ValidationError as error:
        problems = field_problems(error, expected=_EXPECTED, at=at)
        raise McpConfigError("; ".join(map(str, problems))) from None
    headers = _expand_all(checked.headers or {}, (*at, "headers"))
    if isinstance(checked, _HttpEntry):
        if not checked.url:
            _refuse(at, "url", f"an http server needs a 'url': {_URL}")
        transport: Literal["stdio", "http"] = "http"
        command, args, env, cwd = None, (), {}, None
        url = _expand(checked.url, (*at, "url"))
    else:
        if not checked.command:
            _refuse(at, "command", f"a stdio server needs a 'command': {_TO_START}")
        transport, url = "stdio", None
        command = _expand(checked.command, (*at, "command"))
        args = tuple(_expand_all(dict(enumerate(checked.args or ())), (*at, "args")).values())
        env = _expand_all(checked.env or {}, (*at, "env"))
        cwd = _expand(checked.cwd, (*at, "cwd")) if checked.cwd is not None else None
    return McpServerConfig(
        name=name,
        transport=transport,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        always_load=checked.always_load,
        connect_timeout=checked.timeout or DEFAULT_CONNECT_TIMEOUT,
        tool_timeout=checked.tool_timeout or DEFAULT_TOOL_TIMEOUT,
        source=source,
        trust_annotations=bool(checked.trust_annotations),
    )


def _refuse(at: Location, key: str, message: str) -> NoReturn:
    raise McpConfigError(str(FieldProblem((*at, key), message)))


def _expand(value: str, loc: Location) -> str:
    """`expand_env` of one field's text; an unset variable is named with its field."""
    try:
        return expand_env(value)
    except McpConfigError as exc:
        raise McpConfigError(str(FieldProblem(loc, str(exc)))) from None


def _expand_all(values: Mapping[_K, str], loc: Location) -> dict[_K, str]:
    return {key: _expand(value, (*loc, key)) for key, value in values.items()}


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
            errors[str(path)] = (
                f"{path}: mcpServers: must be an object of server names to entries, not "
                f"{describe_value(section)}"
            )
            continue
        for name, raw in entries.items():
            try:
                servers[name] = parse_server_config(name, raw, source=str(path))
                errors.pop(name, None)
            except McpConfigError as exc:
                servers.pop(name, None)
                errors[name] = f"{path}: {exc}"
    return McpConfigs(servers, errors)
