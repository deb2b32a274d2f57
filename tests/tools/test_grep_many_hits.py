"""Grep with thousands of matching files: the order, and the deny rules, hold on the fast path.

The files-with-matches listing is newest first; past a few hundred hits the stat calls run
on threads in chunks, and with no Read deny rule no path is resolved. Both backends (the
`rg` binary, the pure-Python walk) must give the same listing.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from jupyter_toolhost.core.context import AppState, AppStateStore, ToolUseContext
from jupyter_toolhost.core.types import ToolPermissionContext
from jupyter_toolhost.permissions.engine import nothing_hidden, read_denied
from jupyter_toolhost.tools import grep
from jupyter_toolhost.tools._search import RG_ENV, rg_binary

FILES = 1_300


def tree(root: Path) -> list[str]:
    """FILES matching files with shuffled, distinct mtimes; newest first by name."""
    names = [f"d{i % 7}/f{i:04d}.py" for i in range(FILES)]
    ages = list(range(FILES))
    random.Random(7).shuffle(ages)
    for name, age in zip(names, ages, strict=True):
        path = root / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("class Thing:\n    def __init__(self):\n        pass\n")
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))
    (root / "other.py").write_text("nothing here\n")
    return [str(root / n) for _, n in sorted(zip(ages, names, strict=True), reverse=True)]


@pytest.mark.parametrize("backend", ["rg", "python"])
async def test_thousands_of_hits_are_listed_newest_first(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "rg" and rg_binary() is None:
        pytest.skip("no rg binary")
    if backend == "python":
        monkeypatch.setenv(RG_ENV, "none")
    expected = tree(tmp_path)
    context = ToolUseContext(cwd=tmp_path)
    assert read_denied(context) is nothing_hidden
    text = await grep.grep(
        grep.GrepInput.model_validate({"pattern": r"def __init__\(self"}), context
    )
    lines = text.splitlines()
    assert lines[0] == f"Found {FILES} files"
    assert lines[1:] == expected


async def test_a_deny_rule_still_hides_files_among_thousands(tmp_path: Path) -> None:
    expected = tree(tmp_path)
    permission = ToolPermissionContext(rules={"session": {"deny": ("Read(./d3/**)",)}})
    context = ToolUseContext(
        cwd=tmp_path, app_state=AppStateStore(AppState(tool_permission_context=permission))
    )
    assert read_denied(context) is not nothing_hidden
    text = await grep.grep(
        grep.GrepInput.model_validate({"pattern": r"def __init__\(self"}), context
    )
    kept = [path for path in expected if "/d3/" not in path]
    assert text.splitlines()[1 : 1 + len(kept)] == kept
    assert "left out of these results" in text
