"""The report's session-cost table (for `report.py`): the same scripted sessions through this
project and through Claude Code, billed as the API bills the prompt cache
(`bench_session_cost`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .report_parts import Run

NAME = "session_cost"
SIDES = {"claude_code": "Claude Code", "ours": "this project"}


def cost_section(run: Run) -> list[str]:
    """Markdown lines: one row per session length and side, with ours / Claude Code."""
    from .report_parts import table

    payload = run.payload(NAME)
    rows: dict[str, dict[str, Any]] = payload.get("rows", {})
    if not rows:
        return []
    if "scenarios" in payload:
        return _scenario_section(payload)
    lengths = sorted({int(key.split(".")[0]) for key in rows})
    lines: list[list[str]] = []
    for turns in lengths:
        ours, theirs = rows.get(f"{turns}.ours"), rows.get(f"{turns}.claude_code")
        for side, label in SIDES.items():
            row = rows.get(f"{turns}.{side}")
            if row is None:
                continue
            ratio = ""
            if side == "ours" and ours and theirs:
                ratio = f"{ours['billed_equivalent'] / theirs['billed_equivalent']:.3f}"
            lines.append(
                [
                    str(turns),
                    label,
                    f"{row['uncached']:,.0f}",
                    f"{row['cache_writes']:,.0f}",
                    f"{row['cache_reads']:,.0f}",
                    f"{row['billed_equivalent']:,.0f}",
                    ratio,
                ]
            )
    version = payload.get("versions", {}).get("claude-code", "not installed")
    failures = payload.get("failures", {})
    chars = payload.get("page_chars", 0)
    text = [
        f"The cost of a session (`bench_{NAME}`): one `cat page_NNN.txt` Bash call a turn "
        f"({chars:,}-character pages), through this project and through Claude Code {version}, "
        "each against a loopback server that bills the prompt cache as the API does. Tokens are "
        "the server's count (bytes / 4); billed-equivalent input = uncached + 1.25 × cache "
        "writes + 0.1 × cache reads. Target: ours ≤ Claude Code's.",
        "",
        *table(
            [
                "turns",
                "side",
                "uncached",
                "cache writes",
                "cache reads",
                "billed-equivalent",
                "ours / Claude Code",
            ],
            lines,
        ),
        "",
    ]
    text += [f"- {key}: no figure ({why})" for key, why in failures.items()]
    return text + ([""] if failures else [])


def _side_label(side: str, default_policy: str) -> str:
    if side == "claude_code":
        return "Claude Code"
    policy = side.removeprefix("ours_") if side != "ours" else default_policy
    return f"this project, `{policy}`" + (" (default)" if side == "ours" else "")


def _scenario_section(payload: dict[str, Any]) -> list[str]:
    """The scripted sessions (30 and 100 turns, 10 paused cells), each side and cache policy."""
    from .report_parts import table

    rows: dict[str, dict[str, Any]] = payload["rows"]
    scenarios: dict[str, dict[str, Any]] = payload["scenarios"]
    default = str(payload.get("default_policy", "auto"))
    lines: list[list[str]] = []
    for key, scenario in scenarios.items():
        theirs = rows.get(f"{key}.claude_code")
        sides = sorted(
            (name.split(".", 1)[1] for name in rows if name.split(".", 1)[0] == key),
            key=lambda side: (side != "claude_code", side != "ours", side),
        )
        for side in sides:
            row = rows[f"{key}.{side}"]
            ratio = ""
            if side != "claude_code" and theirs:
                ratio = f"{row['billed_equivalent'] / theirs['billed_equivalent']:.3f}"
                ratio += f" (target ≤ {scenario['target']})" if side == "ours" else ""
            lines.append(
                [
                    scenario["label"],
                    _side_label(side, default),
                    f"{row['uncached']:,.0f}",
                    f"{row['cache_writes']:,.0f} ({row.get('cache_writes_1h', 0):,.0f})",
                    f"{row['cache_reads']:,.0f}",
                    f"{row['billed_equivalent']:,.0f}",
                    ratio,
                ]
            )
    version = payload.get("versions", {}).get("claude-code", "not installed")
    failures = payload.get("failures", {})
    text = [
        f"The cost of a session (`bench_{NAME}`): one `cat page_NNN.txt` Bash call a turn, "
        f"through this project (each cache policy) and through Claude Code {version}, each "
        "against a loopback server that bills the prompt cache as the API does, its clock "
        "moved for the pauses (Claude Code: one `claude -p --continue` run per cell). Tokens "
        "are the server's count (bytes / 4); billed-equivalent input = uncached + 1.25 × "
        "5-minute writes + 2 × 1-hour writes + 0.1 × reads.",
        "",
        *table(
            [
                "session",
                "side",
                "uncached",
                "cache writes (1 h)",
                "cache reads",
                "billed-equivalent",
                "ours / Claude Code",
            ],
            lines,
        ),
        "",
    ]
    text += [f"- {key}: no figure ({why})" for key, why in failures.items()]
    return text + ([""] if failures else [])
