"""Read, Write and Edit on real files, directly and through the real pipeline."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import builtin_tools, edit, read, write
from jupyter_toolhost.tools.read.prompt import MAX_LINES, MAX_OUTPUT_BYTES

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534
"""The unprivileged user the permission tests run the tools as when the tests run as root
(as CI does): root reads and writes files whatever their permission bits."""
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def make_context(tmp_path: Path) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=builtin_tools()), cwd=tmp_path)


async def run(context: ToolUseContext, name: str, call_input: dict[str, Any]) -> ToolResult:
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    return await pipeline.run(ToolCall(id=f"toolu_{name}", name=name, input=call_input), context)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root (but the session state) with its bytes and mtime."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".toolhost" not in p.parts
    }


UNPRIVILEGED_STEPS = """
import asyncio, json, os, sys
from pathlib import Path

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.tools import builtin_tools
from jupyter_toolhost.core.types import ToolCall


async def main(cwd, steps):
    context = ToolUseContext(options=ToolUseOptions(tools=builtin_tools()), cwd=Path(cwd))
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    results = []
    for number, (kind, target, argument) in enumerate(steps):
        if kind == "chmod":
            os.chmod(Path(cwd) / target, argument)
            continue
        call = ToolCall(id=f"toolu_{number}", name=target, input=argument)
        result = await pipeline.run(call, context)
        results.append({"is_error": result.is_error, "content": str(result.content)})
    return results


cwd, steps = json.loads(sys.argv[1])
print(json.dumps({"uid": os.geteuid(), "results": asyncio.run(main(cwd, steps))}))
"""


@pytest.fixture
def unprivileged_dir() -> Iterator[Path]:
    """A fresh directory the tools' user can reach (tmp_path is private to root under root)."""
    if IS_ROOT and shutil.which("setpriv") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("as root these tests need setpriv (util-linux) to drop privileges")
        pytest.skip("running as root without setpriv: cannot drop to an unprivileged user")
    with tempfile.TemporaryDirectory(prefix="toolhost-perm-") as name:
        root = Path(name)
        root.chmod(0o755)
        yield root
        for path in [root, *root.rglob("*")]:  # let cleanup through whatever the test locked
            if path.is_dir():
                path.chmod(0o700)


def hand_over(root: Path) -> None:
    """Give everything under `root` to the user the tools run as (a no-op when not root)."""
    if IS_ROOT:
        for path in [root, *root.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)


def run_unprivileged(cwd: Path, steps: list[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    """Run tool calls (and chmods) through the real pipeline in a subprocess as a user
    without root's privileges, in order; the calls' results as dicts."""
    hand_over(cwd)
    command = [sys.executable, "-c", UNPRIVILEGED_STEPS, json.dumps([str(cwd), steps])]
    if IS_ROOT:
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        command = [*drop, *command]
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOOLHOST_HOME"}
    env["HOME"] = str(cwd)
    checkout = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(checkout)
    if IS_ROOT:
        # The child imports the checkout as that user: a clone made in `mktemp -d` is 0700.
        mode = checkout.stat().st_mode
        checkout.chmod(mode | stat.S_IROTH | stat.S_IXOTH)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["uid"] != 0, "the tools ran as root: the permission bits were not tested"
    return report["results"]


# ── Read ─────────────────────────────────────────────────────────────────────────────────


async def test_read_numbers_lines_and_records_the_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    context = make_context(tmp_path)
    result = await run(context, "Read", {"file_path": "a.py"})
    assert not result.is_error
    assert result.content == "     1\tx = 1\n     2\ty = 2"
    state = context.read_file_state.get(tmp_path / "a.py")
    assert state is not None and not state.partial


def test_read_pages_with_offset_and_limit(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    context = make_context(tmp_path)
    text = read.read_file(read.ReadInput(file_path="long.txt", offset=10, limit=3), context)
    assert isinstance(text, str)
    assert text.startswith("    10\tline 10\n    11\tline 11\n    12\tline 12")
    assert "offset=13" in text
    state = context.read_file_state.get(tmp_path / "long.txt")
    assert state is not None and state.partial


def test_read_stops_at_its_line_cap_and_says_how_to_go_on(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("".join(f"{i}\n" for i in range(MAX_LINES + 50)))
    text = read.read_file(read.ReadInput(file_path="many.txt"), make_context(tmp_path))
    assert isinstance(text, str)
    assert text.count("\n") < MAX_LINES + 5
    assert f"offset={MAX_LINES + 1}" in text


async def test_read_refuses_a_huge_file_without_paging_and_pages_into_it(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("w") as handle:
        for i in range(200_000):
            handle.write(f"entry {i:07d} " + "x" * 40 + "\n")
    assert big.stat().st_size > MAX_OUTPUT_BYTES
    context = make_context(tmp_path)
    result = await run(context, "Read", {"file_path": str(big)})
    assert result.is_error and "offset" in str(result.content) and "limit" in str(result.content)
    page = await run(context, "Read", {"file_path": str(big), "offset": 150_000, "limit": 2})
    assert not page.is_error
    assert "150000\tentry 0149999" in str(page.content)


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("missing", "does not exist"),
        ("directory", "is a directory"),
        ("binary", "binary file"),
    ],
)
async def test_read_bad_inputs_are_clear_errors(tmp_path: Path, setup: str, expected: str) -> None:
    if setup == "directory":
        (tmp_path / "target").mkdir()
    elif setup == "binary":
        (tmp_path / "target").write_bytes(b"\x00\x01\x02 ELF stuff")
    before = snapshot(tmp_path)
    context = make_context(tmp_path)
    result = await run(context, "Read", {"file_path": "target"})
    assert result.is_error
    assert expected in str(result.content)
    assert snapshot(tmp_path) == before
    assert len(context.read_file_state) == 0


def test_read_permission_denied(unprivileged_dir: Path) -> None:
    (unprivileged_dir / "secret.txt").write_text("s3cret-bytes")
    (unprivileged_dir / "open.txt").write_text("yes")
    denied, allowed = run_unprivileged(
        unprivileged_dir,
        [
            ("chmod", "secret.txt", 0),
            ("run", "Read", {"file_path": "secret.txt"}),
            ("run", "Read", {"file_path": "open.txt"}),
        ],
    )
    assert denied["is_error"] and "Permission denied" in denied["content"]
    assert "s3cret-bytes" not in denied["content"]
    assert not allowed["is_error"] and allowed["content"] == "     1\tyes"


def test_a_file_in_a_folder_closed_to_the_user_is_refused_by_name(unprivileged_dir: Path) -> None:
    # Another user's saved results on a shared machine: the folder, not the file, is closed.
    (unprivileged_dir / "theirs").mkdir()
    (unprivileged_dir / "theirs" / "result.txt").write_text("their-bytes")
    results = run_unprivileged(
        unprivileged_dir,
        [
            ("chmod", "theirs", 0),
            ("run", "Read", {"file_path": "theirs/result.txt"}),
            (
                "run",
                "Edit",
                {"file_path": "theirs/result.txt", "old_string": "their", "new_string": "my"},
            ),
        ],
    )
    hand_back = unprivileged_dir / "theirs" / "result.txt"
    for result in results:
        assert result["is_error"], result
        assert f"Permission denied: cannot read {hand_back}" in result["content"], result
        assert "their-bytes" not in result["content"]


def test_read_shows_images_as_image_blocks(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    blocks = read.read_file(read.ReadInput(file_path="dot.png"), make_context(tmp_path))
    assert isinstance(blocks, list)
    assert blocks[0]["type"] == "image"
    assert blocks[0]["source"]["media_type"] == "image/png"


def test_read_latin1_and_empty_files(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_bytes("café\n".encode("latin-1"))
    (tmp_path / "empty.txt").write_bytes(b"")
    context = make_context(tmp_path)
    assert read.read_file(read.ReadInput(file_path="old.txt"), context) == "     1\tcafé"
    assert "empty" in str(read.read_file(read.ReadInput(file_path="empty.txt"), context))


# ── Write ────────────────────────────────────────────────────────────────────────────────


async def test_write_creates_a_file_with_parents(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    result = await run(context, "Write", {"file_path": "new/dir/f.txt", "content": "hello\n"})
    assert not result.is_error, result.content
    assert (tmp_path / "new/dir/f.txt").read_text() == "hello\n"
    assert context.read_file_state.changed_since_read(tmp_path / "new/dir/f.txt") is False


async def test_write_refuses_an_existing_file_not_read(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("keep me\n")
    before = snapshot(tmp_path)
    result = await run(make_context(tmp_path), "Write", {"file_path": "f.txt", "content": "x"})
    assert result.is_error and "has not been read" in str(result.content)
    assert snapshot(tmp_path) == before


async def test_write_refuses_a_file_changed_since_read(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("one\n")
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "f.txt"})
    target.write_text("changed by the user\n")
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10_000_000))
    before = snapshot(tmp_path)
    result = await run(context, "Write", {"file_path": "f.txt", "content": "x"})
    assert result.is_error and "modified since" in str(result.content)
    assert snapshot(tmp_path) == before


async def test_write_keeps_crlf_bom_and_permissions_and_shows_a_diff(tmp_path: Path) -> None:
    target = tmp_path / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    target.chmod(0o640)
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "win.txt"})
    result = await run(context, "Write", {"file_path": "win.txt", "content": "a\nc\n"})
    assert not result.is_error, result.content
    assert target.read_bytes() == b"\xef\xbb\xbfa\r\nc\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "-b" in str(result.content) and "+c" in str(result.content)


async def test_write_into_a_directory_path_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await run(make_context(tmp_path), "Write", {"file_path": "d", "content": "x"})
    assert result.is_error and "is a directory" in str(result.content)
    assert (tmp_path / "d").is_dir()


def test_write_permission_denied_changes_nothing(unprivileged_dir: Path) -> None:
    locked = unprivileged_dir / "locked"
    locked.mkdir()
    (locked / "f.txt").write_text("orig")
    read_first, written = run_unprivileged(
        unprivileged_dir,
        [
            ("run", "Read", {"file_path": "locked/f.txt"}),
            ("chmod", "locked", 0o500),
            ("chmod", "locked/f.txt", 0o400),
            ("run", "Write", {"file_path": "locked/f.txt", "content": "new"}),
            ("chmod", "locked", 0o700),
        ],
    )
    assert not read_first["is_error"], read_first
    assert written["is_error"] and "Permission denied" in written["content"]
    assert (locked / "f.txt").read_text() == "orig"
    assert sorted(p.name for p in locked.iterdir()) == ["f.txt"]  # no temp file left behind


# ── Edit ─────────────────────────────────────────────────────────────────────────────────


async def test_edit_replaces_a_unique_string_and_keeps_crlf(tmp_path: Path) -> None:
    target = tmp_path / "code.py"
    target.write_bytes(b"def f():\r\n    return 1\r\n")
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "code.py"})
    result = await run(
        context,
        "Edit",
        {"file_path": "code.py", "old_string": "return 1", "new_string": "return 2"},
    )
    assert not result.is_error, result.content
    assert target.read_bytes() == b"def f():\r\n    return 2\r\n"
    assert "+    return 2" in str(result.content)
    # The file is known as written: a second edit needs no new Read.
    again = edit.edit_file(
        edit.EditInput(file_path="code.py", old_string="f()", new_string="g()"), context
    )
    assert "updated" in again


@pytest.mark.parametrize(
    ("old", "replace_all", "expected"),
    [
        ("missing text", False, "not found"),
        ("x", False, "Found 3 matches"),
        ("same", False, "No changes"),
    ],
)
async def test_edit_failures_change_nothing(
    tmp_path: Path, old: str, replace_all: bool, expected: str
) -> None:
    (tmp_path / "f.txt").write_text("x x x same\n")
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "f.txt"})
    before = snapshot(tmp_path)
    new = "same" if old == "same" else "y"
    result = await run(
        context,
        "Edit",
        {"file_path": "f.txt", "old_string": old, "new_string": new, "replace_all": replace_all},
    )
    assert result.is_error and expected in str(result.content)
    assert snapshot(tmp_path) == before


async def test_edit_replace_all_and_latin1(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes("x é x é\n".encode("latin-1"))
    context = make_context(tmp_path)
    await run(context, "Read", {"file_path": "f.txt"})
    result = await run(
        context,
        "Edit",
        {"file_path": "f.txt", "old_string": "é", "new_string": "è", "replace_all": True},
    )
    assert not result.is_error, result.content
    assert target.read_bytes() == "x è x è\n".encode("latin-1")


async def test_edit_refuses_unread_missing_and_binary_files(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("abc\n")
    (tmp_path / "bin.dat").write_bytes(b"ab\x00cd")
    context = make_context(tmp_path)
    before = snapshot(tmp_path)
    unread = await run(
        context, "Edit", {"file_path": "f.txt", "old_string": "a", "new_string": "b"}
    )
    assert unread.is_error and "has not been read" in str(unread.content)
    missing = await run(
        context, "Edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"}
    )
    assert missing.is_error and "does not exist" in str(missing.content)
    context.read_file_state.record(tmp_path / "bin.dat")
    binary = await run(
        context, "Edit", {"file_path": "bin.dat", "old_string": "ab", "new_string": "b"}
    )
    assert binary.is_error and "binary" in str(binary.content)
    assert snapshot(tmp_path) == before


def test_edit_with_empty_old_string_creates_a_file(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    text = edit.edit_file(
        edit.EditInput(file_path="fresh.txt", old_string="", new_string="hi\n"), context
    )
    assert "created" in text
    assert (tmp_path / "fresh.txt").read_text() == "hi\n"


def test_flags_are_honest() -> None:
    tools = {tool.name: tool for tool in builtin_tools()}
    read_input = read.ReadInput(file_path="x")
    assert tools["Read"].flag(tools["Read"].is_read_only, read_input)
    assert tools["Read"].flag(tools["Read"].is_concurrency_safe, read_input)
    assert tools["Read"].max_result_size_chars == float("inf")
    for name in ("Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit"):
        assert tools[name].get_path is not None, name
    for name, model in (("Write", write.WriteInput), ("Edit", edit.EditInput)):
        fields = {k: "x" for k in ("file_path", "content", "old_string", "new_string")}
        parsed = model.model_validate({k: v for k, v in fields.items() if k in model.model_fields})
        assert not tools[name].flag(tools[name].is_read_only, parsed)
        assert not tools[name].flag(tools[name].is_concurrency_safe, parsed)


def test_builtin_tools_are_fresh_instances() -> None:
    first, second = builtin_tools(), builtin_tools()
    assert [t.name for t in first] == [t.name for t in second]
    assert all(a is not b for a, b in zip(first, second, strict=True))
    for tool in first:
        assert tool.to_api()["input_schema"]["type"] == "object"
