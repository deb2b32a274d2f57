"""Permission rule strings in Claude Code's syntax, parsed into `Rule` values.

Shapes: ``Tool``, ``Tool(specifier)``, ``mcp__server``, ``mcp__server__tool``,
``mcp__server__*`` and ``WebFetch(domain:host)``. An MCP rule is matched against a tool's
server and tool names, which the tool keeps apart (`ruleset.BehaviorRules.mcp_rule`); a
server name never holds ``__`` or starts or ends with ``_`` (`mcp.naming`), so
``mcp__a__b`` names tool ``b`` of server ``a``. Specifiers are understood for the rule
kinds that name a class of tools — ``Bash`` (any tool that runs a shell command), ``Read``
(any tool that reads a file), ``Edit`` (any tool that changes a file; ``Write`` and
``NotebookEdit`` are accepted as spellings of it) and ``WebFetch`` (any tool that fetches a
URL). A specifier is read with Claude Code's escaping (`escapes`: ``\\(`` is ``(``), and
``Tool(*)`` names the whole tool, as in Claude Code (``WebFetch(domain:*)`` too). Any other
tool's specifier is kept as written (``Skill(review)``, ``PowerShell(Get-Date)``): it matches
a tool that declares ``rule_content``, and names nothing otherwise (`%agent rules` shows
such a rule as inactive). Any other shape raises `RuleError` saying what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias, cast

from ...core.errors import ConfigurationError
from .escapes import unescape

RuleKind: TypeAlias = Literal["tool", "shell", "read", "edit", "web", "mcp_server"]

SHELL_RULE = "Bash"
READ_RULE = "Read"
EDIT_RULE = "Edit"
WEB_RULE = "WebFetch"
_KIND_OF_CLASS: dict[str, RuleKind] = {
    SHELL_RULE: "shell",
    READ_RULE: "read",
    EDIT_RULE: "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    WEB_RULE: "web",
}
CLASS_RULE_NAMES: frozenset[str] = frozenset(_KIND_OF_CLASS)
"""Rule names that stand for a class of tools (matched through the tools' flags)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MCP = re.compile(r"mcp__([A-Za-z0-9_-]+?)(?:__([A-Za-z0-9_*-]+))?")
_DOMAIN = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


class RuleError(ConfigurationError, ValueError):
    """A rule string of a shape this system does not understand."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule: which tool (or class of tools) and what specifier."""

    text: str
    """The rule as written."""
    kind: RuleKind
    tool: str
    """The tool name the rule names (``Bash``, ``Read``, ``mcp__server__tool``, ...)."""
    specifier: str | None = None
    """What is inside the parentheses; None for a rule naming a whole tool."""
    server: str | None = None
    """The MCP server, for ``mcp__server`` and ``mcp__server__*`` rules."""

    @property
    def whole_tool(self) -> bool:
        """Whether the rule names a whole tool (or a whole MCP server), not some calls of it."""
        return self.specifier is None


def parse_rule(text: str) -> Rule:
    """Parse one rule string; raises `RuleError` for an unknown shape, and for a value that
    is not a string at all (a settings file may hold one)."""
    value = cast(object, text)  # a settings file may hold anything where a rule belongs
    if not isinstance(value, str):
        raise RuleError(f"a rule must be a string, not {type(value).__name__}")
    return _parse(value)


@lru_cache(maxsize=8192)
def _parse(text: str) -> Rule:
    raw = text
    text = text.strip()
    if not text:
        raise RuleError("empty rule")
    open_at = text.find("(")
    if open_at < 0:
        if text.startswith("mcp__"):
            return _mcp_rule(raw, text)
        if not _NAME.fullmatch(text):
            raise RuleError(
                f"rule {raw!r}: a tool name is letters, digits, '_' or '-' "
                "(write Tool or Tool(specifier))"
            )
        return Rule(raw, _KIND_OF_CLASS.get(text, "tool"), text)
    if not text.endswith(")"):
        raise RuleError(f"rule {raw!r}: missing ')' at the end (write Tool(specifier))")
    name, specifier = text[:open_at].strip(), text[open_at + 1 : -1].strip()
    if not _NAME.fullmatch(name):
        raise RuleError(f"rule {raw!r}: {name!r} is not a tool name")
    if not specifier:
        raise RuleError(f"rule {raw!r}: empty parentheses (write {name} for the whole tool)")
    kind = _KIND_OF_CLASS.get(name, "tool")
    specifier = unescape(specifier)
    if specifier == "*" or (kind == "shell" and specifier == ":*"):
        return Rule(raw, kind, name)  # (Claude Code reads `Tool(*)` as the whole tool)
    if kind == "tool":
        return Rule(raw, kind, name, specifier)
    if kind in ("read", "edit") and specifier in ("**", "//**"):
        specifier = "//**"
    if kind == "web":
        return _web_rule(raw, name, specifier)
    return Rule(raw, kind, name, specifier)


def _web_rule(raw: str, name: str, specifier: str) -> Rule:
    if not specifier.startswith("domain:"):
        raise RuleError(f"rule {raw!r}: {name} rules take domain:host, e.g. {name}(domain:x.org)")
    domain = specifier.removeprefix("domain:").strip().lower().rstrip(".")
    if domain == "*":
        return Rule(raw, "web", name)  # any host: the whole tool
    if not _DOMAIN.fullmatch(domain):
        raise RuleError(f"rule {raw!r}: {domain!r} is not a host name")
    return Rule(raw, "web", name, domain)


def _mcp_rule(raw: str, text: str) -> Rule:
    if text.endswith("__*") and _NAME.fullmatch(text[len("mcp__") : -len("__*")]):
        server = text[len("mcp__") : -len("__*")]  # the server part may hold '__' (an old name)
        return Rule(raw, "mcp_server", f"mcp__{server}", server=server)
    match = _MCP.fullmatch(text)
    if match is None:
        raise RuleError(
            f"rule {raw!r}: MCP rules are mcp__server, mcp__server__tool or mcp__server__*"
        )
    server, tool = match.group(1), match.group(2)
    if tool is None or tool == "*":
        return Rule(raw, "mcp_server", f"mcp__{server}", server=server)
    if "*" in tool:
        raise RuleError(f"rule {raw!r}: '*' is only understood as the whole tool part")
    return Rule(raw, "tool", text)
