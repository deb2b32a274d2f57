"""Any JSON value at any field of a settings file: the file is still read, each problem names
the file, the line and the field (a JSON path), and what the rest of the file says still
applies. The fields are Claude Code's; a broken part is left out, never the whole file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_strategies import JSON

from jupyter_toolhost.core.json_checks import Location, json_path
from jupyter_toolhost.permissions.settings.settings import Settings, load_settings

"""Any JSON value, small: the kinds of thing a person may write where another belongs."""

GOOD: dict[str, Any] = {
    "permissions": {
        "allow": ["Bash(npm test)", "Read(./src/**)"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Read(./.env)"],
        "defaultMode": "plan",
        "additionalDirectories": ["../data"],
    },
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check", "timeout": 5}]}
        ],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"command": "ruff format"}]}],
    },
    "importClaudeCodeSettings": False,
    "env": {"UNKNOWN_KEYS": "are kept out of the way"},
}

FIELDS: list[Location] = [
    ("permissions",),
    ("permissions", "allow"),
    ("permissions", "allow", 1),
    ("permissions", "ask", 0),
    ("permissions", "deny"),
    ("permissions", "defaultMode"),
    ("permissions", "additionalDirectories"),
    ("permissions", "additionalDirectories", 0),
    ("hooks",),
    ("hooks", "PreToolUse"),
    ("hooks", "PreToolUse", 0),
    ("hooks", "PreToolUse", 0, "matcher"),
    ("hooks", "PreToolUse", 0, "hooks"),
    ("hooks", "PreToolUse", 0, "hooks", 0),
    ("hooks", "PreToolUse", 0, "hooks", 0, "type"),
    ("hooks", "PreToolUse", 0, "hooks", 0, "command"),
    ("hooks", "PreToolUse", 0, "hooks", 0, "timeout"),
    ("hooks", "Stop"),
    ("importClaudeCodeSettings",),
    ("env",),
]
"""Every place of `GOOD` a test writes another value at."""

# What `GOOD` gives, each fact with the place it comes from.
FACTS: dict[tuple[object, ...], Location] = {
    ("rule", "allow", "Bash(npm test)"): ("permissions", "allow", 0),
    ("rule", "allow", "Read(./src/**)"): ("permissions", "allow", 1),
    ("rule", "ask", "Bash(git push:*)"): ("permissions", "ask", 0),
    ("rule", "deny", "Read(./.env)"): ("permissions", "deny", 0),
    ("mode", "plan"): ("permissions", "defaultMode"),
    ("directory", "../data"): ("permissions", "additionalDirectories", 0),
    ("hook", "PreToolUse", "Bash", "./check", 5.0): ("hooks", "PreToolUse", 0),
    ("hook", "PostToolUse", "Edit|Write", "ruff format", 60.0): ("hooks", "PostToolUse", 0),
    ("import", False): ("importClaudeCodeSettings",),
}


def facts(found: Settings, source: str) -> set[tuple[object, ...]]:
    """Everything one file gave, as comparable facts."""
    rules = found.rules.get(source, {})
    return {
        *(("rule", behavior, rule) for behavior, listed in rules.items() for rule in listed),
        *((("mode", found.default_mode),) if found.default_mode else ()),
        *(("directory", directory) for directory in found.additional_directories),
        *(("hook", h.event, h.matcher, h.command, h.timeout) for h in found.hooks),
        ("import", found.import_claude),
    }


def overlaps(one: Location, other: Location) -> bool:
    """One place holds the other (or they are the same)."""
    shorter = min(len(one), len(other))
    return one[:shorter] == other[:shorter]


def put(data: Any, loc: Location, value: object) -> Any:
    """A deep copy of `data` with `value` at `loc`."""
    copy = json.loads(json.dumps(data))
    node = copy
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return copy


def read(folder: Path, data: object) -> tuple[Settings, Path]:
    path = folder / ".toolhost" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return load_settings(cwd=folder, home=folder / "home"), path


def test_the_good_file_gives_every_fact_and_no_problem(tmp_path: Path) -> None:
    found, _ = read(tmp_path, GOOD)
    assert found.problems == []
    assert facts(found, "projectSettings") == set(FACTS)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=st.sampled_from(FIELDS), value=JSON)
def test_any_value_at_any_field_is_named_and_the_rest_still_applies(
    tmp_path: Path, where: Location, value: object
) -> None:
    found, path = read(tmp_path, put(GOOD, where, value))
    text = path.read_text()
    for problem in found.problems:
        assert problem.file == str(path) and problem.field is not None
        assert overlaps(_location(problem.field), where), (where, problem.message)
        assert json_path(_location(problem.field)) == problem.field
        assert problem.line is not None and 1 <= problem.line <= text.count("\n") + 1
        assert str(problem).startswith(f"{path}:{problem.line}: {problem.field}: ")
    lost = set(FACTS) - facts(found, "projectSettings")
    assert all(overlaps(FACTS[fact], where) for fact in lost), (where, value, lost)


def _location(path: str) -> Location:
    """``hooks.PreToolUse[0].matcher`` back into its keys and indexes."""
    parts: list[str | int] = []
    for name, index, quoted in re.findall(
        r'(?:^|\.)([A-Za-z_][\w-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]', path
    ):
        parts.append(name or (int(index) if index else json.loads(quoted)))
    return tuple(parts)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=st.sampled_from(FIELDS), value=JSON)
def test_claude_code_s_file_is_read_by_the_same_rules(
    tmp_path: Path, where: Location, value: object
) -> None:
    home = tmp_path / "home"
    claude = tmp_path / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True, exist_ok=True)
    claude.write_text(json.dumps(put(GOOD, where, value), indent=2))
    found = load_settings(cwd=tmp_path, home=home, import_claude=True)
    for problem in found.problems:
        assert problem.file == str(claude) and problem.field is not None
        assert overlaps(_location(problem.field), where), problem.message
    (imported,) = found.claude_imports
    # defaultMode and importClaudeCodeSettings are never taken from Claude Code's files.
    fields = [p.field or "" for p in found.problems]
    assert not any(f.startswith(("importClaude", "permissions.defaultMode")) for f in fields)
    assert found.default_mode is None and imported.source == ".claude/settings.json"


def test_a_wrong_value_is_named_with_what_to_write(tmp_path: Path) -> None:
    broken = put(GOOD, ("hooks", "PreToolUse", 0, "hooks", 0, "timeout"), "5")
    broken = put(broken, ("permissions", "additionalDirectories", 0), 3)
    found, path = read(tmp_path, broken)
    lines = path.read_text().splitlines()
    by_field = {p.field: p for p in found.problems}
    timeout = by_field["hooks.PreToolUse[0].hooks[0].timeout"]
    assert timeout.message.endswith('must be a positive number of seconds, not the string "5"')
    assert timeout.line is not None and '"timeout": "5"' in lines[timeout.line - 1]
    directories = by_field["permissions.additionalDirectories[0]"]
    assert "must be a path string such as" in directories.message
    # A list of directories is taken whole or not at all; the rest of the file applies.
    assert found.additional_directories == ()
    assert found.rules["projectSettings"]["allow"] == ("Bash(npm test)", "Read(./src/**)")
    assert [h.command for h in found.hooks] == ["ruff format"]
