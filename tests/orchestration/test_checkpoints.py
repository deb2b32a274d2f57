"""Checkpoints through the real pipeline and the real file tools, on real files: what is
kept before a write, and how an undo restores it (or refuses) when the files moved on."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.checkpoints import CheckpointStore
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import builtin_tools


class Agent:
    """A pipeline with a checkpoint store, and the calls a scripted model would make."""

    def __init__(self, root: Path, *, limit: int | None = None) -> None:
        self.context = ToolUseContext(options=ToolUseOptions(tools=builtin_tools()), cwd=root)
        self.store = CheckpointStore(self.context.session_dir() / "checkpoints", limit_bytes=limit)
        self.pipeline = Pipeline(
            ResultStore(self.context.session_dir() / "tool-results"), checkpoints=self.store
        )
        self.calls = 0

    async def call(self, name: str, **call_input: Any) -> ToolResult:
        self.calls += 1
        call = ToolCall(id=f"toolu_{self.calls}", name=name, input=call_input)
        result = await self.pipeline.run(call, self.context)
        assert not result.is_error, result.content
        return result

    async def write(self, path: Path, content: str) -> None:
        if path.exists():
            await self.call("Read", file_path=str(path))
        await self.call("Write", file_path=str(path), content=content)


async def test_a_cell_is_undone_to_the_state_before_it(tmp_path: Path):
    agent = Agent(tmp_path)
    (tmp_path / "a.txt").write_text("one\n")
    agent.store.begin("first cell")
    await agent.write(tmp_path / "a.txt", "two\n")
    await agent.write(tmp_path / "a.txt", "three\n")  # a second write keeps the first copy
    await agent.write(tmp_path / "new.txt", "made\n")
    await agent.call("Read", file_path=str(tmp_path / "a.txt"))  # reads keep nothing

    [checkpoint] = agent.store.checkpoints
    assert [r.shown for r in checkpoint.files] == [
        str(tmp_path / "a.txt"),
        str(tmp_path / "new.txt"),
    ]
    plan = agent.store.plan_undo(checkpoint)
    assert not plan.needs_force
    assert "-three" in plan.files[0].diff and "+one" in plan.files[0].diff
    undo, lines = agent.store.undo(plan, force=False)

    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert not (tmp_path / "new.txt").exists()
    assert len(lines) == 2 and all("restored" in line for line in lines)
    assert checkpoint.undone_by == undo.number and undo.undoes == checkpoint.number
    note = agent.store.take_model_note()
    assert (
        note is not None and "undid checkpoint 1" in note and agent.store.take_model_note() is None
    )

    # The undone version was kept: undoing the undo brings the agent's files back.
    _, again = agent.store.undo(agent.store.plan_undo(undo), force=False)
    assert (tmp_path / "a.txt").read_text() == "three\n"
    assert (tmp_path / "new.txt").read_text() == "made\n", again


async def test_a_call_that_changed_nothing_leaves_no_checkpoint_entry(tmp_path: Path):
    agent = Agent(tmp_path)
    (tmp_path / "same.txt").write_text("same\n")
    agent.store.begin("cell")
    await agent.write(tmp_path / "same.txt", "same\n")
    failed = await agent.pipeline.run(
        ToolCall(
            id="toolu_x",
            name="Edit",
            input={
                "file_path": str(tmp_path / "same.txt"),
                "old_string": "absent",
                "new_string": "x",
            },
        ),
        agent.context,
    )
    assert failed.is_error
    assert [r for c in agent.store.checkpoints for r in c.files] == []
    assert list((agent.store.directory / "files").iterdir()) == []


async def test_two_cells_on_one_file_undo_the_later_one_only(tmp_path: Path):
    agent = Agent(tmp_path)
    target = tmp_path / "c.txt"
    agent.store.begin("cell A")
    await agent.write(target, "A\n")
    agent.store.begin("cell B")
    await agent.write(target, "B\n")

    latest = agent.store.get(None)
    assert latest is not None and latest.label == "cell B"
    agent.store.undo(agent.store.plan_undo(latest), force=False)
    assert target.read_text() == "A\n"
    # Undo twice: the next one without a number is cell A, and the file goes away again.
    earlier = agent.store.get(None)
    assert earlier is not None and earlier.label == "cell A"
    agent.store.undo(agent.store.plan_undo(earlier), force=False)
    assert not target.exists()
    assert agent.store.get(None) is None


async def test_notebook_edit_and_edit_are_checkpointed_by_their_flags(tmp_path: Path):
    agent = Agent(tmp_path)
    notebook = tmp_path / "n.ipynb"
    cells = [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "outputs": []}]
    original = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    notebook.write_text(original)
    (tmp_path / "e.py").write_text("x = 1\n")
    agent.store.begin("edits")
    await agent.call("Read", file_path=str(notebook))
    await agent.call("NotebookEdit", notebook_path=str(notebook), cell_id="c1", new_source="x = 2")
    await agent.call("Read", file_path=str(tmp_path / "e.py"))
    await agent.call("Edit", file_path=str(tmp_path / "e.py"), old_string="1", new_string="2")

    [checkpoint] = agent.store.checkpoints
    assert len(checkpoint.files) == 2
    agent.store.undo(agent.store.plan_undo(checkpoint), force=False)
    assert notebook.read_text() == original
    assert (tmp_path / "e.py").read_text() == "x = 1\n"


async def test_a_changed_file_is_restored_only_when_forced_and_kept_either_way(tmp_path: Path):
    agent = Agent(tmp_path)
    target = tmp_path / "b.txt"
    target.write_text("before\n")
    agent.store.begin("cell")
    await agent.write(target, "agent\n")
    target.write_text("person\n")

    [checkpoint] = agent.store.checkpoints
    plan = agent.store.plan_undo(checkpoint)
    assert plan.needs_force and "changed since the agent wrote it" in (plan.files[0].changed or "")
    _, lines = agent.store.undo(plan, force=False)
    assert target.read_text() == "person\n" and "not restored" in lines[0]

    undo, lines = agent.store.undo(agent.store.plan_undo(checkpoint), force=True)
    assert target.read_text() == "before\n", lines
    agent.store.undo(agent.store.plan_undo(undo), force=False)
    assert target.read_text() == "person\n"  # the person's version was kept, not lost


async def test_a_deleted_file_comes_back_when_forced(tmp_path: Path):
    agent = Agent(tmp_path)
    target = tmp_path / "d.txt"
    target.write_text("kept\n")
    agent.store.begin("cell")
    await agent.write(target, "agent\n")
    target.unlink()
    plan = agent.store.plan_undo(agent.store.checkpoints[0])
    assert "absent now" in (plan.files[0].changed or "")
    agent.store.undo(plan, force=True)
    assert target.read_text() == "kept\n"


async def test_undo_replaces_a_planted_link_instead_of_following_it(tmp_path: Path):
    agent = Agent(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("not yours\n")
    target = tmp_path / "s.txt"
    target.write_text("mine\n")
    agent.store.begin("cell")
    await agent.write(target, "agent\n")
    target.unlink()
    target.symlink_to(victim)  # planted after the agent wrote

    plan = agent.store.plan_undo(agent.store.checkpoints[0])
    assert "a symbolic link now" in (plan.files[0].changed or "")
    agent.store.undo(plan, force=True)
    assert not target.is_symlink() and target.read_text() == "mine\n"
    assert victim.read_text() == "not yours\n"


async def test_a_folder_swapped_for_a_link_blocks_the_undo(tmp_path: Path):
    agent = Agent(tmp_path)
    sub = tmp_path / "sub"
    sub.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    agent.store.begin("cell")
    await agent.write(sub / "f.txt", "agent\n")
    sub.rename(tmp_path / "sub-moved")
    sub.symlink_to(elsewhere)

    plan = agent.store.plan_undo(agent.store.checkpoints[0])
    assert "replaced by a link" in (plan.files[0].blocked or "")
    undo, lines = agent.store.undo(plan, force=True)
    assert not undo.files and "not restored" in lines[0]
    assert list(elsewhere.iterdir()) == []


async def test_a_folder_in_the_files_place_is_never_removed(tmp_path: Path):
    agent = Agent(tmp_path)
    target = tmp_path / "x"
    agent.store.begin("cell")
    await agent.write(target, "agent\n")
    target.unlink()
    target.mkdir()
    (target / "inside.txt").write_text("precious\n")
    plan = agent.store.plan_undo(agent.store.checkpoints[0])
    assert "a folder stands in its place" in (plan.files[0].blocked or "")
    agent.store.undo(plan, force=True)
    assert (target / "inside.txt").read_text() == "precious\n"


async def test_a_protected_folder_needs_the_second_confirmation(tmp_path: Path):
    agent = Agent(tmp_path)
    (tmp_path / ".claude").mkdir()
    target = tmp_path / ".claude" / "notes.md"
    agent.store.begin("cell")
    await agent.write(target, "agent\n")
    plan = agent.store.plan_undo(agent.store.checkpoints[0])
    assert plan.needs_force and "protected folder" in (plan.files[0].changed or "")
    agent.store.undo(plan, force=False)
    assert target.read_text() == "agent\n"
    agent.store.undo(agent.store.plan_undo(agent.store.checkpoints[0]), force=True)
    assert not target.exists()


async def test_a_file_over_the_limit_is_not_kept_and_the_person_is_told(tmp_path: Path):
    agent = Agent(tmp_path, limit=1000)
    big = tmp_path / "big.txt"
    big.write_text("x" * 5000)
    agent.store.begin("cell")
    await agent.write(big, "small\n")
    await agent.write(tmp_path / "ok.txt", "fits\n")

    [checkpoint] = agent.store.checkpoints
    assert [r.name for r in checkpoint.files] == ["ok.txt"]
    [notice] = agent.store.take_notices()
    assert "big.txt: not checkpointed" in notice and "JUPYTER_TOOLHOST_CHECKPOINT_LIMIT" in notice


async def test_checkpoints_outlive_the_process_and_a_tampered_copy_is_refused(tmp_path: Path):
    agent = Agent(tmp_path)
    target = tmp_path / "p.txt"
    target.write_text("first\n")
    agent.store.begin("cell")
    await agent.write(target, "agent\n")

    fresh = CheckpointStore(agent.store.directory)  # a new conversation reusing the id
    assert fresh.checkpoints == [] and fresh.get(None) is None
    again = CheckpointStore(agent.store.directory)  # a new kernel resuming the session
    again.load()
    [checkpoint] = again.checkpoints
    assert checkpoint.label == "cell" and checkpoint.files[0].after is not None
    [blob] = (agent.store.directory / "files").iterdir()
    os.chmod(blob, 0o644)
    blob.write_text("planted\n")
    plan = again.plan_undo(checkpoint)
    assert "kept copy was changed" in (plan.files[0].blocked or "")
    again.undo(plan, force=True)
    assert target.read_text() == "agent\n"
