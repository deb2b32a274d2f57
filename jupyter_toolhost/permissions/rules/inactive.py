"""Rules that name nothing in this session, told apart from rules that do (`%agent rules`)."""

from __future__ import annotations

from collections.abc import Mapping

from .rules import RuleError, parse_rule


def inactive_reason(text: str, tools: Mapping[str, bool]) -> str | None:
    """Why a rule names nothing among `tools` (tool name → whether it declares a
    ``rule_content``), or None when it may apply. Such a rule is kept, not rejected: a
    settings file written for Claude Code (``PowerShell(...)``) stays whole, and the rule
    applies if a tool of that name is added. MCP rules are left out (their servers connect
    later)."""
    try:
        rule = parse_rule(text)
    except RuleError as exc:
        return str(exc)
    if rule.kind != "tool" or rule.tool.startswith("mcp__"):
        return None
    if rule.tool not in tools:
        return f"inactive: there is no {rule.tool} tool here"
    if rule.specifier is not None and not tools[rule.tool]:
        return f"inactive: {rule.tool} calls have nothing a specifier can name"
    return None
