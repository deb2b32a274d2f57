"""The rules are compiled once, for the home the permission engine was given: the files a
search withholds follow that home, not the user's, when the two differ."""

from __future__ import annotations

from pathlib import Path

from jupyter_toolhost.core.context import AppState, AppStateStore, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolPermissionContext
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions import PermissionEngine
from jupyter_toolhost.permissions.engine import read_denied
from jupyter_toolhost.permissions.rules.ruleset import compiled_rules
from jupyter_toolhost.tools import builtin_tools


def _context(project: Path, rules: dict[str, dict[str, tuple[str, ...]]]) -> ToolUseContext:
    permission = ToolPermissionContext(rules=rules)
    glob = next(t for t in builtin_tools() if t.name == "Glob")
    return ToolUseContext(
        options=ToolUseOptions(tools=(glob,)),
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
        cwd=project,
    )


async def test_a_search_withholds_what_the_engines_home_rule_denies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert str(home) != str(Path.home())
    (home / "secret").mkdir(parents=True)
    (home / "secret" / "key.txt").write_text("k")
    (home / "notes.txt").write_text("n")
    context = _context(home, {"session": {"deny": ("Read(~/secret/**)",)}})
    engine = PermissionEngine(home=str(home))
    pipeline = Pipeline(ResultStore(tmp_path / "results"), can_use_tool=engine)

    call = ToolCall("toolu_1", "Glob", {"pattern": "**/*.txt"})
    result = await pipeline.run(call, context)

    assert not result.is_error, result.content
    assert "notes.txt" in str(result.content)
    assert "key.txt" not in str(result.content)


def test_one_compiled_form_per_rules_directory_and_home(tmp_path: Path) -> None:
    rules = {"session": {"deny": ("Read(~/secret/**)",)}}
    first = compiled_rules(rules, cwd=str(tmp_path), home=str(tmp_path / "a"))
    assert compiled_rules(rules, cwd=str(tmp_path), home=str(tmp_path / "a")) is first
    other = compiled_rules(rules, cwd=str(tmp_path), home=str(tmp_path / "b"))
    assert other is not first
    assert first.deny.read.match((f"{tmp_path}/a/secret/k",)) is not None
    assert other.deny.read.match((f"{tmp_path}/a/secret/k",)) is None
    context = _context(tmp_path, rules)
    context.home = str(tmp_path / "a")
    assert read_denied(context)(str(tmp_path / "a" / "secret" / "k"))
