"""Adversarial calls from `permission_cases/adversarial.json`: every one must be blocked.

The corpus runs the pure decision with the real resolver over a real directory tree in
tmp_path, symlinks included, under a realistic rule set in default mode.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from test_permissions_tools import TOOLS_BY_NAME, run_decide

from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.permissions import OsResolver

CASES_FILE = Path(__file__).parents[1] / "permission_cases" / "adversarial.json"
CORPUS = json.loads(CASES_FILE.read_text())
CASES: list[dict[str, Any]] = CORPUS["cases"]


class _Empty(BaseModel):
    pass


def _mcp(name: str) -> Tool[Any]:
    return build_tool(name=name, input_model=_Empty, call=lambda i, c: "", description=name)


def _fill(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{cwd}", str(root / "project")).replace("{root}", str(root))
    if isinstance(value, dict):
        return {k: _fill(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, root) for v in value]
    return value


def _tree(root: Path, setup: str | None) -> None:
    project = root / "project"
    for directory in ("secrets", "src", "config", ".git"):
        (project / directory).mkdir(parents=True, exist_ok=True)
    (project / "secrets" / "key").write_text("hunter2")
    (project / ".env").write_text("TOKEN=1")
    (root / "outside").mkdir(exist_ok=True)
    (root / "outside" / "victim.py").write_text("")
    (root / "data" / "allowed").mkdir(parents=True, exist_ok=True)
    for link in filter(None, (setup or "").split(";")):
        source, target = link.split("->")
        (root / source).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(root / target, root / source)


def test_the_corpus_is_big_and_covers_every_category() -> None:
    categories = {case["category"] for case in CASES}
    assert len(CASES) >= 60
    assert {"traversal", "symlink", "prefix", "compound", "nested", "quoting"} <= categories
    assert {"env", "redirect", "unicode", "case", "web"} <= categories
    assert all(case["expect"] in ("deny", "ask") for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_every_adversarial_call_is_blocked(case: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path.resolve()
    _tree(root, case.get("setup"))
    tool = TOOLS_BY_NAME.get(case["tool"]) or _mcp(case["tool"])
    result = run_decide(
        tool,
        _fill(case["input"], root),
        cwd=str(root / "project"),
        rules={"projectSettings": _fill(CORPUS["rules"], root)},
        resolver=OsResolver(home=str(root / "home")),
    )
    assert result.behavior != "allow", f"{case['id']} was allowed: {result.reason}"
    assert result.behavior == case["expect"], f"{case['id']}: {result}"
    assert result.reason is not None
