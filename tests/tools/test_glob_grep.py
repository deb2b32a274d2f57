"""Glob and Grep on a real tree, with the rg binary and the pure-Python fallback compared."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import builtin_tools
from jupyter_toolhost.tools._search import RG_ENV, rg_binary
from jupyter_toolhost.tools.glob.prompt import MAX_RESULTS

RG = rg_binary()
CI = os.environ.get("CI") == "true"  # CI installs the ripgrep wheel: no rg there is a failure
BACKENDS = [
    pytest.param(
        "rg", marks=pytest.mark.skipif(RG is None and not CI, reason="no rg binary installed")
    ),
    "python",
]


def make_tree(root: Path) -> Path:
    files = {
        "x.txt": "a\nfoo\nb\nc\nd\ne\nfoo\nf\n",
        "sub/y.txt": "Foo\nfoo bar\n",
        "src/app.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 42\n",
        "src/deep/util.py": "import os\nFOO = 1\n",
        "src/deep/types.pyi": "foo: int\n",
        "notes.md": "# foo\n",
        "z.log": "foo in a log\n",
        "build/out.txt": "foo built\n",
        ".hidden/h.txt": "foo hidden\n",
        ".env": "FOO=1\n",
        "multi.txt": "start\nmiddle\nend\n",
        "crlf.txt": "foo\r\nbar\r\n",
        ".toolhost/sessions/s1/transcript.jsonl": "{}\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "sub" / ".gitignore").write_text("!keep.log\n")
    (root / "sub" / "keep.log").write_text("foo kept\n")
    (root / "bin.dat").write_bytes(b"foo\x00binary")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("foo\n")
    now = time.time()
    for offset, name in enumerate(sorted(files)):
        os.utime(root / name, (now - 100 + offset, now - 100 + offset))
    return root


def make_context(root: Path) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=builtin_tools()), cwd=root)


async def run(context: ToolUseContext, name: str, call_input: dict[str, Any]) -> ToolResult:
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    return await pipeline.run(ToolCall(id="toolu_1", name=name, input=call_input), context)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


GREP_CASES: list[dict[str, Any]] = [
    {"pattern": "foo"},
    {"pattern": "foo", "-i": True},
    {"pattern": "foo", "output_mode": "content"},
    {"pattern": "foo", "output_mode": "content", "-n": False},
    {"pattern": "^foo$", "output_mode": "content"},
    {"pattern": "foo", "output_mode": "content", "-C": 1},
    {"pattern": "foo", "output_mode": "content", "-A": 2, "path": "x.txt"},
    {"pattern": "foo", "output_mode": "content", "-B": 1, "-i": True},
    {"pattern": "foo", "output_mode": "count"},
    {"pattern": "def \\w+", "type": "py", "output_mode": "content"},
    {"pattern": "foo", "glob": "*.{md,pyi}"},
    {"pattern": "foo", "glob": "*.log"},
    {"pattern": "foo", "glob": "!*.txt"},
    {"pattern": "foo", "type": "txt", "glob": "*.md"},
    {"pattern": "start.*end", "multiline": True, "output_mode": "content"},
    {"pattern": "foo", "path": "sub"},
    {"pattern": "foo", "output_mode": "content", "head_limit": 2},
    {"pattern": "nothing-matches-this"},
]


async def grep_both(tree: Path, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    outputs = []
    for backend in ("rg", "python"):
        monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
        result = await run(make_context(tree), "Grep", case)
        assert not result.is_error, (backend, result.content)
        outputs.append(str(result.content))
    return outputs


@pytest.mark.skipif(RG is None and not CI, reason="no rg binary to compare with")
@pytest.mark.parametrize(
    "case", GREP_CASES, ids=lambda c: " ".join(f"{k}={v}" for k, v in c.items())
)
async def test_grep_backends_agree(
    tree: Path, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_rg, with_python = await grep_both(tree, case, monkeypatch)
    assert with_rg == with_python


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_follows_ripgrep_rules(
    tree: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
    context = make_context(tree)
    listed = str((await run(context, "Grep", {"pattern": "foo"})).content)
    assert listed.startswith("Found ")
    assert f"{tree}/x.txt" in listed and f"{tree}/sub/keep.log" in listed
    for skipped in ("z.log", "build/out.txt", ".hidden", ".env", "bin.dat", ".git/HEAD"):
        assert skipped not in listed, skipped
    content = str((await run(context, "Grep", {"pattern": "foo", "output_mode": "content",
                                                  "-C": 1, "path": "x.txt"})).content)  # fmt: skip
    assert content.splitlines() == [
        f"{tree}/x.txt-1-a",
        f"{tree}/x.txt:2:foo",
        f"{tree}/x.txt-3-b",
        "--",
        f"{tree}/x.txt-6-e",
        f"{tree}/x.txt:7:foo",
        f"{tree}/x.txt-8-f",
    ]
    multiline = await run(
        context, "Grep", {"pattern": "start.middle", "multiline": True, "output_mode": "content"}
    )
    assert str(multiline.content).splitlines() == [
        f"{tree}/multi.txt:1:start",
        f"{tree}/multi.txt:2:middle",
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_bad_inputs(
    tree: Path, backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
    context = make_context(tree)
    invalid = await run(context, "Grep", {"pattern": "(unclosed"})
    assert invalid.is_error and "(unclosed" in str(invalid.content)
    missing = await run(context, "Grep", {"pattern": "x", "path": "no/such/dir"})
    assert missing.is_error and "does not exist" in str(missing.content)
    bad_type = await run(context, "Grep", {"pattern": "x", "type": "nosuchtype"})
    assert bad_type.is_error and "nosuchtype" in str(bad_type.content)
    bad_mode = await run(context, "Grep", {"pattern": "x", "output_mode": "lines"})
    assert bad_mode.is_error and "output_mode" in str(bad_mode.content)


def test_grep_schema_uses_claude_code_field_names() -> None:
    grep_tool = next(t for t in builtin_tools() if t.name == "Grep")
    properties = grep_tool.input_schema["properties"]
    assert {"-i", "-n", "-A", "-B", "-C", "output_mode", "head_limit", "multiline"} <= set(
        properties
    )


# ── Glob ─────────────────────────────────────────────────────────────────────────────────

GLOB_PATTERNS = [
    "*.py",
    "**/*.txt",
    "src/*.py",
    "src/**/*.py*",
    "*.{md,log}",
    ".env",
    "*.nope",
    "**/*.jsonl",
]


@pytest.mark.skipif(RG is None and not CI, reason="no rg binary to compare with")
@pytest.mark.parametrize("pattern", GLOB_PATTERNS)
async def test_glob_backends_agree(
    tree: Path, pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = []
    for backend in ("rg", "python"):
        monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
        result = await run(make_context(tree), "Glob", {"pattern": pattern})
        assert not result.is_error, result.content
        outputs.append(result.content)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_sorts_newest_first_and_respects_gitignore(
    tree: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
    context = make_context(tree)
    os.utime(tree / "src/app.py", (time.time() + 50, time.time() + 50))
    result = await run(context, "Glob", {"pattern": "**/*.py"})
    assert str(result.content).splitlines() == [
        f"{tree}/src/app.py",
        f"{tree}/src/deep/util.py",
    ]
    txt = str((await run(context, "Glob", {"pattern": "*.txt"})).content)
    assert f"{tree}/.hidden/h.txt" in txt and "build/out.txt" not in txt
    anchored = await run(context, "Glob", {"pattern": "*.py", "path": "src/deep"})
    assert anchored.content == f"{tree}/src/deep/util.py"
    absolute = await run(context, "Glob", {"pattern": f"{tree}/src/*.py"})
    assert absolute.content == f"{tree}/src/app.py"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern", ["*.jsonl", "**/*.jsonl", "**/*"])
async def test_glob_never_lists_the_toolhost_folder(
    tree: Path, backend: str, pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
    result = await run(make_context(tree), "Glob", {"pattern": pattern})
    assert ".toolhost" not in str(result.content) and "transcript" not in str(result.content)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_caps_results_with_a_note(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RG_ENV, RG if backend == "rg" and RG else "none")
    for i in range(MAX_RESULTS + 20):
        (tmp_path / f"f{i:03d}.csv").write_text("x")
    result = await run(make_context(tmp_path), "Glob", {"pattern": "*.csv"})
    lines = str(result.content).splitlines()
    assert len(lines) == MAX_RESULTS + 1
    assert "truncated" in lines[-1] and f"of {MAX_RESULTS + 20}" in lines[-1]


async def test_glob_bad_inputs(tree: Path) -> None:
    context = make_context(tree)
    missing = await run(context, "Glob", {"pattern": "*", "path": "nowhere"})
    assert missing.is_error and "does not exist" in str(missing.content)
    a_file = await run(context, "Glob", {"pattern": "*", "path": "x.txt"})
    assert a_file.is_error and "not a directory" in str(a_file.content)
    none = await run(context, "Glob", {"pattern": "*.nothing"})
    assert none.content == "No files found"


def test_search_tools_are_read_only_and_safe() -> None:
    tools = {t.name: t for t in builtin_tools()}
    for name, sample in (("Glob", {"pattern": "*"}), ("Grep", {"pattern": "x"})):
        parsed = tools[name].input_model.model_validate(sample)
        assert tools[name].flag(tools[name].is_read_only, parsed)
        assert tools[name].flag(tools[name].is_concurrency_safe, parsed)
        assert tools[name].get_path is not None
