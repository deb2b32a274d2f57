"""The report's everyday-commands table (for `report.py`): this project's decisions and
Claude Code's on the same everyday commands, side by side (`bench_everyday_commands`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report_parts import Run

NAME = "everyday_commands"
_SHOWN = {"allow": "allowed", "ask": "asked", "deny": "denied"}


def everyday_section(run: Run) -> list[str]:
    """Markdown lines: a count per column, then every command on which the columns differ."""
    from .report_parts import table

    payload = run.payload(NAME)
    if not payload:
        return []
    heads: dict[str, str] = payload.get("columns", {})
    decisions: dict[str, object] = payload.get("decisions", {})
    commands: list[str] = payload.get("commands", [])
    measured = {k: v for k, v in decisions.items() if isinstance(v, dict)}
    missing = [f"{heads.get(k, k)}: {v}" for k, v in decisions.items() if isinstance(v, str)]
    keys = [k for k in heads if k in measured]
    if not keys or not commands:
        return [f"Everyday commands (`bench_{NAME}`): no decisions ({'; '.join(missing)}).", ""]

    def cell(key: str, command: str) -> str:
        value = measured[key].get(command)  # type: ignore[union-attr]
        return _SHOWN.get(str(value), str(value))

    differ = [c for c in commands if len({cell(k, c) for k in keys}) > 1]
    rows = [
        [
            f"not allowed, of {len(commands)}",
            *(str(sum(cell(k, c) != "allowed" for c in commands)) for k in keys),
        ],
        *([f"`{c}`", *(cell(k, c) for k in keys)] for c in differ),
    ]
    alike = [c for c in commands if c not in differ]
    stopped = [f"`{c}`" for c in alike if cell(keys[0], c) != "allowed"]
    rest = (
        f"allowed by all, except {', '.join(stopped)}: asked by all"
        if stopped
        else "allowed by all"
    )
    rules = payload.get("rules", {})
    version = payload.get("versions", {}).get("claude-code", "?")
    lines = [
        f"Everyday data-science commands (`bench_{NAME}`), permission mode "
        f"{payload.get('mode', 'default')}, deny {', '.join(rules.get('deny', []))}, allow "
        f"{', '.join(rules.get('allow', []))}; Claude Code {version}. The commands on which the "
        f"columns differ; the other {len(alike)} are decided alike ({rest}).",
        "",
        *table(["command", *(heads[k] for k in keys)], rows),
    ]
    if missing:
        lines += ["", f"Not measured: {'; '.join(missing)}."]
    return [*lines, ""]
