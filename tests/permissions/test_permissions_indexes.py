"""The structures that make decisions fast must not change a decision.

Rule sets keep merged, pre-sorted buckets and remember what each path or command text
matched; the lexical resolver's facts are cached per string. So: the first rule in order still
wins whatever the depth of its prefix, a remembered answer survives the memo filling up, and
with the real resolver one compiled rule set sees a symlink or a file created between two
decisions (nothing that depends on the disk is remembered).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from test_permissions_tools import EDIT, READ, SHELL

from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PermissionResult
from jupyter_toolhost.permissions import OsResolver, PureResolver, compile_rules, decide
from jupyter_toolhost.permissions.paths import MEMO_SIZE, PathRuleSet, compile_pattern
from jupyter_toolhost.permissions.rules.ruleset import CompiledRules
from jupyter_toolhost.shell.commands import analyze

CWD = "/home/user/project"


def _decide(
    tool: Tool[Any],
    raw: dict[str, Any],
    rules: CompiledRules,
    *,
    cwd: str = CWD,
    resolver: Any = None,
) -> PermissionResult:
    return decide(
        tool=tool,
        input=tool.input_model.model_validate(raw),
        rules=rules,
        mode="default",
        cwd=cwd,
        resolver=resolver or PureResolver(home="/home/user"),
    )


def _path_set(specs: tuple[str, ...], *, folded: bool) -> PathRuleSet[str]:
    return PathRuleSet(
        [(s, compile_pattern(s, cwd=CWD, home="/home/user", settings_root=CWD)) for s in specs],
        folded=folded,
    )


@pytest.mark.parametrize("folded", [False, True])
def test_the_first_path_rule_in_order_wins_at_any_depth_of_its_prefix(folded: bool) -> None:
    specs = ("//**/key.txt", "//srv/**", "//srv/data/**", "//srv/data/keys/**")
    for order in itertools.permutations(specs):
        rule_set = _path_set(order, folded=folded)
        assert rule_set.match(["/srv/data/keys/key.txt"]) == order[0], order
        deeper = [s for s in order if s != "//**/key.txt"]
        assert rule_set.match(["/srv/data/keys/other"]) == deeper[0], order
        shallow = [s for s in order if s in ("//srv/**", "//srv/data/**")]
        assert rule_set.match(["/srv/data/x"]) == shallow[0], order
        assert rule_set.match(["/elsewhere/key.txt"]) == "//**/key.txt"
        assert rule_set.match(["/elsewhere/x"]) is None
        # prefixes compare whole segments: /srv/database is not below /srv/data
        assert rule_set.match(["/srv/database/x"]) == "//srv/**"


def test_a_deny_rule_from_any_prefix_is_named_in_rule_order() -> None:
    first, second = "Read(./secrets/**)", "Read(**/*.pem)"
    for deny in ([first, second], [second, first]):
        rules = compile_rules({"projectSettings": {"deny": deny}}, cwd=CWD, home="/home/user")
        result = _decide(READ, {"file_path": "secrets/tls/server.pem"}, rules)
        assert result.behavior == "deny"
        assert result.reason is not None and result.reason.detail == f"deny rule {deny[0]}"


def test_a_wildcard_shell_rule_and_a_prefix_rule_keep_their_order() -> None:
    wildcard, prefix = "Bash(* --force)", "Bash(deploy:*)"
    for deny in ([wildcard, prefix], [prefix, wildcard]):
        rules = compile_rules({"projectSettings": {"deny": deny}}, cwd=CWD, home="/home/user")
        result = _decide(SHELL, {"command": "deploy prod --force"}, rules)
        assert result.behavior == "deny"
        assert result.reason is not None and result.reason.detail == f"deny rule {deny[0]}"
        other = _decide(SHELL, {"command": "make --force"}, rules)
        assert other.reason is not None and other.reason.detail == f"deny rule {wildcard}"


def test_answers_stay_right_after_the_memo_fills_up() -> None:
    rule_set = _path_set(("./secrets/**",), folded=True)
    paths = [f"{CWD}/{'secrets' if i % 3 == 0 else 'src'}/f{i}" for i in range(3 * MEMO_SIZE)]
    for _ in range(2):
        for i, path in enumerate(paths):
            assert (rule_set.match([path]) is not None) == (i % 3 == 0), path
    assert rule_set.match([f"{CWD}/SECRETS/f1"]) == "./secrets/**"  # folded, still


def test_the_lexical_facts_follow_a_cleared_parse_cache() -> None:
    rules = compile_rules(
        {"projectSettings": {"deny": ["Bash(rm:*)"], "allow": ["Bash(make:*)"]}},
        cwd=CWD,
        home="/home/user",
    )
    command = {"command": "make all && rm -rf build"}
    before = _decide(SHELL, command, rules)
    analyze.cache_clear()
    after = _decide(SHELL, command, rules)
    assert before == after and after.behavior == "deny"
    assert _decide(SHELL, {"command": "make all"}, rules).behavior == "allow"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "project"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("SECRET")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("# TODO\n")
    (root / ".git").mkdir()
    return root


def _real(root: Path) -> tuple[CompiledRules, OsResolver]:
    resolver = OsResolver(home=str(root.parent / "home"))
    deny = ["Read(./secrets/**)", "Read(**/.env)", "Edit(./secrets/**)"]
    rules = compile_rules({"projectSettings": {"deny": deny}}, cwd=str(root), home=resolver.home())
    return rules, resolver


def test_a_symlink_made_between_two_decisions_is_seen(project: Path) -> None:
    rules, resolver = _real(project)
    calls: list[tuple[Tool[Any], dict[str, Any]]] = [
        (READ, {"file_path": "link/key.txt"}),
        (SHELL, {"command": "cat link/key.txt"}),
        (SHELL, {"command": "cd link && cat key.txt"}),
    ]
    for tool, raw in calls:
        assert _decide(tool, raw, rules, cwd=str(project), resolver=resolver).behavior == "allow"
    (project / "link").symlink_to(project / "secrets")
    for tool, raw in calls:
        result = _decide(tool, raw, rules, cwd=str(project), resolver=resolver)
        assert result.behavior == "deny", raw
        assert result.reason is not None and "Read(./secrets/**)" in result.reason.detail


def test_a_symlink_into_a_protected_folder_is_seen_for_the_next_write(project: Path) -> None:
    rules, resolver = _real(project)
    edit = {"file_path": "cfg/config", "content": "x"}
    assert _decide(EDIT, edit, rules, cwd=str(project), resolver=resolver).behavior == "ask"
    (project / "cfg").symlink_to(project / ".git")
    result = _decide(EDIT, edit, rules, cwd=str(project), resolver=resolver)
    assert result.behavior == "ask"
    assert result.reason is not None and result.reason.kind == "safety"


def test_a_file_created_between_two_tree_checks_is_seen(project: Path) -> None:
    rules, resolver = _real(project)
    search = {"command": "grep -r TODO src"}
    assert _decide(SHELL, search, rules, cwd=str(project), resolver=resolver).behavior == "allow"
    (project / "src" / ".env").write_text("TOKEN=1\n")
    result = _decide(SHELL, search, rules, cwd=str(project), resolver=resolver)
    assert result.behavior == "ask"
    assert result.reason is not None and result.reason.kind == "safety"
