"""The file tools check the file they open, and Grep's notes say nothing about denied files.

A background process (a real subprocess) flips a link between a public file and a secret
while Reads of the link run concurrently through the real pipeline and engine; Edit, Write
and NotebookEdit meet the same flip on the folder they write into.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_toolhost.core.context import AppState, AppStateStore, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolPermissionContext, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.engine import PermissionEngine
from jupyter_toolhost.tools import builtin_tools

SECRET = "SECRET-race-8e2f-0c71"
DENY = ("Read(./secrets/**)", "Edit(./protected/**)")
READS = 10_000


def context_for(root: Path, mode: str = "acceptEdits") -> ToolUseContext:
    permission = ToolPermissionContext(mode=mode, rules={"session": {"deny": DENY}})  # type: ignore[arg-type]
    return ToolUseContext(
        options=ToolUseOptions(tools=builtin_tools()),
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
        cwd=root,
        project_root=root,
    )


async def call(context: ToolUseContext, name: str, input: dict[str, object]) -> ToolResult:
    store = ResultStore(context.session_dir() / "tool-results")
    pipeline = Pipeline(store, can_use_tool=PermissionEngine())
    return await pipeline.run(ToolCall(f"toolu_{uuid.uuid4().hex[:12]}", name, input), context)


FLIPPER = textwrap.dedent(
    """
    import os, sys
    link, a, b = sys.argv[1:4]
    tmp = link + ".flip"
    while True:
        for target in (a, b):
            try:
                os.symlink(target, tmp)
            except FileExistsError:
                os.unlink(tmp)
                continue
            os.replace(tmp, link)
    """
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text(f"{SECRET}\n")
    (root / "data").mkdir()
    (root / "data" / "public.csv").write_text("region,sales\nnorth,12\n")
    (root / "protected").mkdir()
    (root / "protected" / "a.txt").write_text("original\n")
    (root / "data" / "sales.csv").symlink_to(root / "data" / "public.csv")
    return root


@pytest.fixture
def flipping(tree: Path) -> Iterator[Path]:
    link = tree / "data" / "sales.csv"
    process = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(link), str(tree / "data" / "public.csv"),
         str(tree / "secrets" / "key.txt")]
    )  # fmt: skip
    try:
        yield link
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow  # 10,000 reads against a link flipping underneath: about 11 s
async def test_link_race_returns_no_denied_content(tree: Path, flipping: Path) -> None:
    context = context_for(tree, "default")
    outcomes = {"read": 0, "denied": 0, "refused": 0}
    for _ in range(READS // 500):
        results = await asyncio.gather(
            *(call(context, "Read", {"file_path": "data/sales.csv"}) for _ in range(500))
        )
        for result in results:
            body = str(result.content)
            assert SECRET not in body
            if not result.is_error:
                outcomes["read"] += 1
                assert "north,12" in body
            elif "changed after permission was checked" in body:
                outcomes["refused"] += 1
            else:
                assert "denied" in body, body
                outcomes["denied"] += 1
    assert sum(outcomes.values()) == READS
    # The race really happened both ways: the check saw each target, and some opens found
    # the other one.
    assert outcomes["read"] > 0 and outcomes["denied"] > 0 and outcomes["refused"] > 0, outcomes


async def test_grep_of_the_flipping_link_finds_no_secret(tree: Path, flipping: Path) -> None:
    context = context_for(tree, "default")
    results = await asyncio.gather(
        *(
            call(context, "Grep", {"pattern": "SECRET|north", "path": "data/sales.csv",
                                   "output_mode": "content"})
            for _ in range(300)
        )
    )  # fmt: skip
    assert not any(SECRET in str(r.content) for r in results)
    assert any("north" in str(r.content) for r in results)


async def test_writes_follow_the_folder_they_opened(tree: Path) -> None:
    """A folder link flipped to a protected folder after the check: Write, Edit and
    NotebookEdit refuse instead of writing there."""
    context = context_for(tree)
    (tree / "out").symlink_to(tree / "data")
    notebook = {"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "1",
                           "outputs": [], "execution_count": None}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (tree / "data" / "a.txt").write_text("original\n")
    (tree / "data" / "n.ipynb").write_text(json.dumps(notebook))
    (tree / "protected" / "n.ipynb").write_text(json.dumps(notebook))
    (tree / "protected" / "a.txt").touch()  # the same mtime as data/a.txt's, near enough
    for path in ("out/a.txt", "out/n.ipynb", "protected/a.txt", "protected/n.ipynb"):
        # (every file read, so the read-before-write check is not what stops the writes)
        assert not (await call(context, "Read", {"file_path": path})).is_error

    class Flip:
        """Swaps the folder link the moment the permission check is done with it."""

        def __init__(self) -> None:
            self.engine = PermissionEngine()

        async def __call__(self, request: object) -> object:
            verdict = await self.engine(request)  # type: ignore[arg-type]
            (tree / "out").unlink()
            (tree / "out").symlink_to(tree / "protected")
            return verdict

    calls = [
        ("Write", {"file_path": "out/a.txt", "content": "changed\n"}),
        ("Edit", {"file_path": "out/a.txt", "old_string": "original", "new_string": "x"}),
        ("NotebookEdit", {"notebook_path": "out/n.ipynb", "cell_id": "c1", "new_source": "2"}),
        ("Write", {"file_path": "out/new.txt", "content": "planted\n"}),
    ]
    for name, input in calls:
        (tree / "out").unlink()
        (tree / "out").symlink_to(tree / "data")
        pipeline = Pipeline(ResultStore(context.session_dir() / "r"), can_use_tool=Flip())  # type: ignore[arg-type]
        result = await pipeline.run(ToolCall(f"toolu_{uuid.uuid4().hex[:8]}", name, input), context)
        assert result.is_error, (name, result.content)
        assert "changed after permission was checked" in str(result.content)
    assert (tree / "protected" / "a.txt").read_text() == "original\n"
    assert json.loads((tree / "protected" / "n.ipynb").read_text()) == notebook
    assert sorted(p.name for p in (tree / "protected").iterdir()) == ["a.txt", "n.ipynb"]


async def test_grep_note_is_the_same_whatever_the_denied_file_holds(tree: Path) -> None:
    """Two guesses at the secret: one right, one wrong. The answers are the same text."""
    context = context_for(tree, "default")
    right = await call(context, "Grep", {"pattern": "SECRET-race-8e2f", "path": "."})
    wrong = await call(context, "Grep", {"pattern": "SECRET-race-XXXX", "path": "."})
    assert str(right.content) == str(wrong.content)
    assert "Read deny rule" in str(right.content)
    counted = [
        await call(context, "Grep", {"pattern": guess, "output_mode": mode})
        for guess in ("SECRET-race-8", "SECRET-race-9")
        for mode in ("count", "content", "files_with_matches")
    ]
    assert [str(r.content) for r in counted[:3]] == [str(r.content) for r in counted[3:]]
    globbed = [await call(context, "Glob", {"pattern": p}) for p in ("**/key.txt", "**/nope.txt")]
    assert str(globbed[0].content) == str(globbed[1].content)
