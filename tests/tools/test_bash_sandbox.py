"""The Bash sandbox with real bubblewrap, real files and real deny rules in the app state.

Most attacks run with the pipeline's allow-everything permission check, so the sandbox alone
stands between the command and the protected paths; one runs through the real engine.
Under ``CI=true`` a missing bwrap fails these tests instead of skipping them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import (
    AppState,
    AppStateStore,
    SandboxOptions,
    ToolUseContext,
    ToolUseOptions,
)
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import build_tool
from jupyter_toolhost.core.types import ToolCall, ToolPermissionContext, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.engine import PermissionEngine
from jupyter_toolhost.permissions.rules.ruleset import compile_rules
from jupyter_toolhost.tools import bash, builtin_tools
from jupyter_toolhost.tools.bash import sandbox
from jupyter_toolhost.tools.bash.sandbox_paths import WALK_LIMIT, sandbox_paths

SECRET = "SECRET-7f3a-do-not-leak"
RULES = {
    "allow": ("Bash(python3:*)",),
    "deny": (
        "Read(./secrets/**)",
        "Read(./data/private/**)",
        "Read(**/*.pem)",
        "Read(./linked/**)",
        "Read(./my secrets/**)",
        "Read(./CaseDir/**)",
        "Read(./nope/**)",
        "Edit(./protected/**)",
    ),
}


@pytest.fixture
def bwrap() -> None:
    problem = sandbox.bwrap_problem()[1]
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs bubblewrap for the sandbox tests: {problem}")
        pytest.skip(f"no usable bubblewrap here: {problem}")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    return folder


def make_tree(root: Path) -> dict[str, Path]:
    """A project with secrets in every shape the rules above protect."""
    root.mkdir(parents=True, exist_ok=True)
    outside = root.parent / "outside"
    (outside / "certs").mkdir(parents=True, exist_ok=True)
    files = {
        "key": root / "secrets" / "key.txt",
        "private": root / "data" / "private" / "p.txt",
        "pem": root / "deep" / "er" / "cert.pem",
        "linked_target": outside / "target.txt",
        "spaced": root / "my secrets" / "ключ файл.txt",
        "case": root / "casedir" / "c.txt",
        "outside_pem": outside / "certs" / "x.pem",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET}\n")
    (root / "data" / "public.txt").write_text("public\n")
    (root / "protected").mkdir()
    (root / "protected" / "a").write_text("original\n")
    (root / "src").mkdir()
    (root / "src" / "code.py").write_text("print('hi')\n")
    (root / "link-to-key").symlink_to(files["key"])
    (root / "linked").symlink_to(outside)
    (root / "certlink").symlink_to(outside / "certs")
    return files


def make_context(
    cwd: Path, rules: dict[str, tuple[str, ...]] | None = None, **sandbox: Any
) -> ToolUseContext:
    """A dontAsk context with `rules`; `sandbox` are `SandboxOptions` fields."""
    permission = ToolPermissionContext(mode="dontAsk", rules={"session": rules or RULES})
    return ToolUseContext(
        options=ToolUseOptions(tools=builtin_tools(), sandbox=SandboxOptions(**sandbox)),
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
        cwd=cwd,
    )


async def run(
    context: ToolUseContext, command: str, *, engine: bool = False, **more: Any
) -> ToolResult:
    store = ResultStore(context.session_dir() / "tool-results")
    pipeline = Pipeline(store, can_use_tool=PermissionEngine()) if engine else Pipeline(store)
    call = ToolCall(id=f"toolu_{uuid.uuid4().hex[:12]}", name="Bash", input={"command": command})
    call.input.update(more)
    return await pipeline.run(call, context)


def text(result: ToolResult) -> str:
    return str(result.content)


async def test_python_allowed_by_rule_cannot_read_the_secret(
    bwrap: None, home: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    context = make_context(work)
    result = await run(context, "python3 -c \"print(open('secrets/key.txt').read())\"", engine=True)
    assert SECRET not in text(result)
    direct = await run(context, "python3 -c \"print(open('secrets/key.txt').read())\"")
    assert direct.is_error and "No such file" in text(direct)  # the folder is empty inside
    assert SECRET not in text(direct)


ATTACKS = [
    "cat secrets/key.txt",
    "grep -r SECRET . ; true",
    "cat link-to-key",
    "ln -s secrets/key.txt l2 && cat l2",
    'cat "/proc/self/root$PWD/secrets/key.txt"',
    'for p in /proc/[0-9]*; do cat "$p/root$PWD/secrets/key.txt" 2>/dev/null; done; true',
    "umount secrets; cat secrets/key.txt",
    "unshare -m sh -c 'umount secrets; cat secrets/key.txt'",
    "mv secrets s2; cat s2/key.txt",
    "mv data data2; cat data2/private/p.txt",
    "ln secrets/key.txt hard; cat hard",
    "cp -r secrets copy; cat copy/key.txt",
    "cat data/private/p.txt",
    "cat deep/er/cert.pem",
    "find . -name '*.pem' -exec cat {} +",
    "cat linked/target.txt",
    'cat "$(readlink -f linked)/target.txt"',
    "cat certlink/x.pem",
    "cat 'my secrets/ключ файл.txt'",
    "cat casedir/c.txt",
    "tar cf - . 2>/dev/null | strings",
    "mknod disk b 8 0 && cat disk | strings | head",
]


@pytest.mark.parametrize("command", ATTACKS)
async def test_read_denied_paths_are_not_visible(
    bwrap: None, home: Path, tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    files = make_tree(work)
    context = make_context(work)
    result = await run(context, command)
    assert SECRET not in text(result)
    again = await run(context, "cat s2/key.txt data2/private/p.txt hard copy/key.txt; true")
    assert SECRET not in text(again)  # nothing moved or copied out for a later call
    for path in files.values():
        assert path.read_text() == f"{SECRET}\n"  # and the real files are untouched


async def test_grep_runs_and_finds_only_public_files(
    bwrap: None, home: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    context = make_context(work)
    result = await run(context, "grep -rl . --include='*.txt' . | sort")
    assert not result.is_error
    assert "public.txt" in text(result) and "key.txt" not in text(result)


EDIT_ATTACKS = [
    "echo x > protected/a",
    "echo x >> protected/a",
    "sed -i s/original/changed/ protected/a",
    "rm -f protected/a",
    "rm -rf protected",
    "mv protected/a protected/b",
    "mv protected gone",
    "touch protected/new",
    "python3 -c \"open('protected/a','w').write('x')\"",
    "chmod 000 protected/a",
]


@pytest.mark.parametrize("command", EDIT_ATTACKS)
async def test_edit_denied_paths_are_read_only(
    bwrap: None, home: Path, tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    before = (work / "protected" / "a").stat().st_mode
    result = await run(make_context(work), command)
    assert result.is_error, text(result)
    assert (work / "protected" / "a").read_text() == "original\n"
    assert (work / "protected" / "a").stat().st_mode == before
    assert sorted(p.name for p in (work / "protected").iterdir()) == ["a"]


SETTINGS_ATTACKS = [
    "echo '{}' > .toolhost/settings.local.json",
    "echo '{}' > .toolhost/settings.json",
    "rm -rf .toolhost/settings.json",
    "mv .toolhost old",
    "rm -rf .toolhost",
    'echo "{}" > "$HOME/.toolhost/settings.json"',
    'mv "$HOME/.toolhost" "$HOME/old"',
    "mkdir -p .toolhost/x",
]


@pytest.mark.parametrize("command", SETTINGS_ATTACKS)
async def test_settings_cannot_be_written_from_inside(
    bwrap: None, home: Path, tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    settings = work / ".toolhost" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {}}')
    context = make_context(work)
    result = await run(context, command)
    assert result.is_error, text(result)
    assert settings.read_text() == '{"permissions": {}}'
    assert not (work / ".toolhost" / "settings.local.json").exists()
    assert not (work / ".toolhost" / "x").exists()
    assert not (home / ".toolhost" / "settings.json").exists()
    assert (home / ".toolhost").is_dir()
    # persisted results still land in the session folder, which stays writable
    inside = await run(
        context, f"echo ok > {context.session_dir()}/probe && cat {context.session_dir()}/probe"
    )
    assert text(inside) == "ok"


async def test_everything_else_works_as_before(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    context = make_context(work)
    listing = await run(context, "ls")
    assert not listing.is_error and "src" in text(listing).split()
    assert not (await run(context, "cd src")).is_error
    assert text(await run(context, "pwd")) == str(work / "src")
    wrote = await run(context, "echo made > made.txt && cat made.txt")
    assert text(wrote) == "made" and (work / "src" / "made.txt").read_text() == "made\n"
    assert not (await run(context, "cd ..")).is_error
    assert text(await run(context, "cat data/public.txt")) == "public"
    assert text(await run(context, "ls -A 'my secrets' | wc -l")) == "0"


async def test_background_command_is_sandboxed(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    context = make_context(work)
    result = await run(
        context, "cat secrets/key.txt > leaked.txt; echo done > bg.txt", run_in_background=True
    )
    assert not result.is_error and "task id" in text(result)
    for _ in range(200):
        if (work / "bg.txt").exists():
            break
        await asyncio.sleep(0.05)
    assert (work / "bg.txt").read_text() == "done\n"
    assert SECRET not in (work / "leaked.txt").read_text()


def _running(marker: str) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


async def test_timeout_kills_the_sandboxed_group(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    marker = f"100.{time.time_ns() % 10**9}"
    started = time.monotonic()
    result = await run(make_context(work), f"sleep {marker} & sleep {marker}", timeout=1000)
    assert result.is_error and "timed out" in text(result)
    assert time.monotonic() - started < 5
    for _ in range(100):
        if not _running(marker):
            break
        await asyncio.sleep(0.02)
    assert _running(marker) == []


async def test_big_output_is_streamed_to_disk(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    result = await run(make_context(work), "head -c 200000000 /dev/zero | tr '\\0' x")
    assert not result.is_error
    body = text(result)
    assert "<persisted-output>" in body
    saved = Path(body.split("Full output saved to: ", 1)[1].split("\n", 1)[0])
    assert saved.stat().st_size == 200_000_000


async def test_sandbox_off_runs_unsandboxed(
    bwrap: None, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "0")
    context = make_context(work)
    assert not bash.TOOL.runs_sandboxed(context)
    result = await run(context, "cat secrets/key.txt")
    assert text(result) == SECRET  # the sandbox is off: only the command check would stop this
    option_off = make_context(work, enabled=False)
    monkeypatch.delenv(sandbox.SANDBOX_ENV)
    assert text(await run(option_off, "cat secrets/key.txt")) == SECRET


async def test_without_bwrap_the_notice_comes_once_per_session(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    empty = tmp_path / "no-bwrap-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    context = make_context(work)
    assert not bash.TOOL.runs_sandboxed(context)
    first = await run(context, "echo one")
    assert text(first) == f"one\n\n{sandbox.NOTICE}"
    second = await run(context, "echo two")
    assert text(second) == "two"
    background = await run(context, "true", run_in_background=True)
    assert sandbox.NOTICE not in text(background)
    fresh = make_context(work)
    failed = await run(fresh, "exit 3")
    assert failed.is_error and text(failed).count(sandbox.NOTICE) == 1
    required = make_context(work, enabled=True)
    refused = await run(required, f"touch {work / 'ran'}")
    assert refused.is_error and "bubblewrap" in text(refused)
    assert not (work / "ran").exists()


async def test_sandboxed_flag(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    assert bash.TOOL.runs_sandboxed(make_context(work))
    bare_read = make_context(work, {"deny": ("Read",)})
    assert not bash.TOOL.runs_sandboxed(bare_read)  # a path sandbox cannot hide everything
    above = make_context(work, {"deny": (f"Read(/{tmp_path}/**/*.txt)",)})
    assert not bash.TOOL.runs_sandboxed(above)  # the walk covers the roots only
    assert not bash.TOOL.runs_sandboxed(make_context(work, enabled=False))
    plain = build_tool(
        name="Plain", input_model=bash.BashInput, call=bash.run_bash, description="x"
    )
    assert not plain.runs_sandboxed(make_context(work))

    def broken(_context: ToolUseContext) -> bool:
        raise RuntimeError("no idea")

    raising = build_tool(
        name="Raising",
        input_model=bash.BashInput,
        call=bash.run_bash,
        description="x",
        sandboxed=broken,
    )
    assert not raising.runs_sandboxed(make_context(work))


def test_sandbox_paths_resolves_patterns(tmp_path: Path) -> None:
    work = tmp_path / "work"
    files = make_tree(work)
    compiled = compile_rules({"session": RULES}, cwd=str(work), home=str(tmp_path / "home"))
    found = sandbox_paths(compiled, cwd=str(work), roots=[str(work)])
    hidden = set(found.hidden)
    assert str(work / "secrets") in hidden
    assert str(work / "casedir") in hidden  # deny rules compare case-insensitively
    assert str(files["pem"]) in hidden
    assert str(work / "linked") in hidden and str(tmp_path / "outside") in hidden
    assert str(files["outside_pem"]) in hidden  # found through the symlinked directory
    assert str(work / "my secrets") in hidden
    assert not any("nope" in p for p in hidden)  # nothing there: nothing to hide
    assert found.read_only == (str(work / "protected"),)
    assert found.complete and found.truncated == ()


def test_walk_budget_hides_what_it_did_not_reach(tmp_path: Path) -> None:
    work = tmp_path / "work"
    for i in range(30):
        (work / f"d{i}" / "inner").mkdir(parents=True)
        (work / f"d{i}" / "inner" / "f.txt").write_text("x")
    (work / "d29" / "inner" / "k.pem").write_text(SECRET)
    compiled = compile_rules({"session": {"deny": ("Read(**/*.pem)",)}}, cwd=str(work), home="/")
    found = sandbox_paths(compiled, cwd=str(work), roots=[str(work)], limit=40)
    assert found.truncated
    hidden = set(found.hidden)
    assert any(str(work / "d29" / "inner").startswith(p) for p in hidden)
    full = sandbox_paths(compiled, cwd=str(work), roots=[str(work)])
    assert full.hidden == (str(work / "d29" / "inner" / "k.pem"),) and not full.truncated


async def test_truncated_walk_still_hides_in_the_shell(
    bwrap: None, home: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    bulk = work / "a"
    bulk.mkdir(parents=True)
    for i in range(WALK_LIMIT + 100):
        (bulk / f"f{i}").touch()
    (work / "z" / "deeper").mkdir(parents=True)
    (work / "z" / "deeper" / "k.pem").write_text(SECRET)
    rules = {"deny": ("Read(**/*.pem)",)}
    compiled = compile_rules({"session": rules}, cwd=str(work), home=str(home))
    assert sandbox_paths(compiled, cwd=str(work), roots=[str(work)]).walked > WALK_LIMIT
    context = make_context(work, rules)
    result = await run(context, "cat z/deeper/k.pem; ls a | wc -l")
    assert SECRET not in text(result) and str(WALK_LIMIT + 100) in text(result)


def test_bwrap_probe_is_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probed once: a later call starts no process (counted, not timed: a busy machine
    makes any time bound flaky)."""
    if shutil.which("bwrap") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs bubblewrap for the sandbox tests")
        pytest.skip("bwrap is not installed")
    first = sandbox.bwrap_problem()
    started: list[object] = []
    real_run = subprocess.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(args[0] if args else kwargs.get("args"))
        return real_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    assert sandbox.bwrap_problem() == first
    assert started == []
