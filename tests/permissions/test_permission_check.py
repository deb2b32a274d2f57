"""`Session.check` and `%agent check` against what a real call then does.

Every case runs in every permission mode, each time in a fresh temp tree with real settings
files (project, local and user scope): `session.check(...)` first, then the same call through
the session's real pipeline and `PermissionEngine`, with an approver that records whether it
was asked (and answers deny) and, in auto mode, a classifier that records whether it was
consulted and is unsure. The check must say what the call then did: allow → it ran without
asking; ask → the approver was asked (with the same message and suggestions); deny → it was
denied, with the same message, without asking. Allowed Bash commands really run: each is
harmless inside the temp tree.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_helpers import Kernel
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.types import (
    PERMISSION_MODES,
    PermissionAllow,
    PermissionDeny,
    PermissionMode,
    PermissionResult,
    ToolCall,
    ToolResult,
)
from jupyter_toolhost.jupyter.magic.options import Command, UsageError, parse_command
from jupyter_toolhost.jupyter.views.check_display import Displays, check_display
from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest, PermissionRequest
from jupyter_toolhost.permissions.check import CheckError, CheckReport
from jupyter_toolhost.permissions.engine import PermissionEngine
from jupyter_toolhost.tools import builtin_tools

Behavior = Literal["allow", "ask", "deny"]
Scope = Literal["user", "project", "local"]


class IssueIn(BaseModel):
    title: str
    body: str = ""


def _create_issue(input: IssueIn, _context: Any) -> str:
    return f"created {input.title}"


MCP_TOOL = build_tool(
    name="mcp__github__create_issue",
    input_model=IssueIn,
    call=_create_issue,
    description="Create an issue on GitHub.",
    is_mcp=True,
)


@dataclass(frozen=True)
class Case:
    id: str
    tool: str
    input: Mapping[str, Any] | str
    expect: Mapping[PermissionMode, Behavior]
    """What some modes must decide (pinned, so that check and call cannot agree on nonsense)."""
    rules: Mapping[Scope, Mapping[str, list[str]]] = field(default_factory=dict)
    setup: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """Calls run first in bypassPermissions (a `cd` the shell then remembers)."""


def _r(
    *,
    user: Mapping[str, list[str]] | None = None,
    project: Mapping[str, list[str]] | None = None,
    local: Mapping[str, list[str]] | None = None,
) -> dict[Scope, Mapping[str, list[str]]]:
    """Rules by settings scope (the user's, the project's and the local file)."""
    found: dict[Scope, Mapping[str, list[str]] | None] = {
        "user": user,
        "project": project,
        "local": local,
    }
    return {scope: rules for scope, rules in found.items() if rules}


NPM_ALLOW = _r(project={"allow": ["Bash(npm run test:*)"]})
SECRETS = _r(project={"deny": ["Read(./secrets/**)"]})
TODO = {"todos": [{"content": "look", "status": "pending", "activeForm": "looking"}]}

CASES = [
    # ── Bash: read-only, writes, redirections, pipes, wrappers, substitutions ──
    Case("ls", "Bash", "ls", {"default": "allow", "plan": "allow", "dontAsk": "allow"}),
    Case("pipe-read", "Bash", "cat notes.md | wc -l", {"default": "allow", "plan": "allow"}),
    Case(
        "rm-rf-then-ls",
        "Bash",
        "rm -rf build && ls",
        {"default": "ask", "acceptEdits": "ask", "plan": "deny", "dontAsk": "deny"},
    ),
    Case(
        "cd-then-write",
        "Bash",
        "cd src && echo x > new.txt",
        {"default": "ask", "acceptEdits": "allow", "plan": "deny"},
    ),
    Case("redirect", "Bash", "echo hi > out.txt", {"default": "ask", "acceptEdits": "allow"}),
    Case(
        "redirect-outside",
        "Bash",
        "ls > ../outside/listing.txt",
        {"default": "ask", "acceptEdits": "ask", "bypassPermissions": "allow"},
    ),
    Case("pipe-to-sh", "Bash", "echo ls | sh", {"default": "ask", "plan": "deny"}),
    Case("sudo-rm", "Bash", "sudo rm -rf build", {"default": "ask", "dontAsk": "deny"}),
    # sudo is a wrapper: the command it runs decides (a read-only one inside is allowed)
    Case("sudo-ls", "Bash", "sudo -n ls", {"default": "allow", "plan": "allow"}),
    Case("substitution", "Bash", "echo $(whoami)", {"default": "ask"}),
    Case("cat-outside", "Bash", "cat ../outside/keep.txt", {"default": "ask", "plan": "ask"}),
    Case("ls-absolute-outside", "Bash", "ls /etc", {"default": "ask"}),
    Case(
        "shell-moved-outside",
        "Bash",
        "ls",
        {"default": "ask", "plan": "ask"},
        setup=(("Bash", {"command": "cd ../outside"}),),
    ),
    Case(
        "shell-moved-inside",
        "Bash",
        "cat app.py",
        {"default": "allow"},
        setup=(("Bash", {"command": "cd src"}),),
    ),
    Case("npm-test-allowed", "Bash", "npm run test", {"default": "allow"}, NPM_ALLOW),
    Case("npm-test-args", "Bash", "npm run test -- --silent", {"default": "allow"}, NPM_ALLOW),
    Case(
        "npm-test-compound",
        "Bash",
        "npm run test && rm -rf build",
        {"default": "ask", "dontAsk": "deny"},
        NPM_ALLOW,
    ),
    Case("npm-testing-prefix", "Bash", "npm run testing", {"default": "ask"}, NPM_ALLOW),
    Case("cat-denied", "Bash", "cat secrets/key.txt", {"default": "deny"}, SECRETS),
    # allowed where Bash runs sandboxed (the denied files are hidden from it), else asked
    Case("glob-reaching-denied", "Bash", "cat secre*/*", {}, SECRETS),
    Case(
        "unparseable",
        "Bash",
        "echo 'unterminated",
        {"default": "ask", "plan": "deny", "bypassPermissions": "ask", "dontAsk": "deny"},
    ),
    Case(
        "ask-rule",
        "Bash",
        "git status",
        {"default": "ask", "bypassPermissions": "ask", "dontAsk": "deny"},
        _r(local={"ask": ["Bash(git status)"]}),
    ),
    Case(
        "local-allow",
        "Bash",
        "touch made.txt",
        {"default": "allow", "plan": "deny"},
        _r(local={"allow": ["Bash(touch:*)"]}),
    ),
    Case(
        "user-deny",
        "Bash",
        "rm notes.md",
        {"default": "deny", "bypassPermissions": "deny"},
        _r(user={"deny": ["Bash(rm:*)"]}),
    ),
    # ── files: inside, outside, symlinks, denied paths ──
    Case("read-inside", "Read", "notes.md", {"default": "allow", "dontAsk": "allow"}),
    Case("read-outside", "Read", "../outside/keep.txt", {"default": "ask", "plan": "ask"}),
    Case("read-symlink-out", "Read", "link_out/keep.txt", {"default": "ask"}),
    Case("read-denied", "Read", "secrets/key.txt", {"default": "deny"}, SECRETS),
    Case("read-link-to-denied", "Read", "links/key", {"default": "deny"}, SECRETS),
    Case(
        "read-allowed-outside",
        "Read",
        "{root}/outside/keep.txt",
        {"default": "allow", "dontAsk": "allow"},
        _r(user={"allow": ["Read(/{root}/outside/**)"]}),
    ),
    Case(
        "edit-inside",
        "Edit",
        "notes.md",
        {"default": "ask", "acceptEdits": "allow", "plan": "deny", "dontAsk": "deny"},
    ),
    Case("edit-outside", "Edit", "../outside/keep.txt", {"default": "ask", "acceptEdits": "ask"}),
    Case(
        "write-allowed",
        "Write",
        {"file_path": "src/new.py", "content": "x = 1\n"},
        {"default": "allow", "plan": "deny"},
        _r(local={"allow": ["Edit(./src/**)"]}),
    ),
    Case("write-new", "Write", {"file_path": "new.txt", "content": "hi\n"}, {"default": "ask"}),
    Case(
        "write-symlink-out",
        "Write",
        {"file_path": "out_file", "content": "hi\n"},
        {"default": "ask", "acceptEdits": "ask"},
    ),
    Case("glob-inside", "Glob", "**/*.md", {"default": "allow"}),
    Case("grep-outside", "Grep", {"pattern": "x", "path": "../outside"}, {"default": "ask"}),
    # ── MCP ──
    Case("mcp-no-rule", "mcp__github__create_issue", "bug", {"default": "ask", "plan": "deny"}),
    Case(
        "mcp-server-allowed",
        "mcp__github__create_issue",
        {"title": "bug"},
        {"default": "allow", "dontAsk": "allow"},
        _r(local={"allow": ["mcp__github__*"]}),
    ),
    Case(
        "mcp-server-denied",
        "mcp__github__create_issue",
        {"title": "bug"},
        {"default": "deny", "bypassPermissions": "deny"},
        _r(project={"deny": ["mcp__github"]}, local={"allow": ["mcp__github__*"]}),
    ),
    Case(
        "mcp-tool-asks",
        "mcp__github__create_issue",
        {"title": "bug"},
        {"default": "ask", "bypassPermissions": "ask"},
        _r(project={"ask": ["mcp__github__create_issue"]}, local={"allow": ["mcp__github__*"]}),
    ),
    # ── tools with their own checks, bad input ──
    Case(
        "todo-write", "TodoWrite", TODO, {"default": "allow", "plan": "allow", "dontAsk": "allow"}
    ),
    Case("exit-plan", "ExitPlanMode", "1. look", {"default": "allow", "plan": "ask"}),
    Case("bad-input", "Read", {"file_path": "notes.md", "offset": "x"}, {"default": "deny"}),
]


# ── the tree and the session ──────────────────────────────────────────────────────────


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_tree(root: Path, rules: Mapping[Scope, Mapping[str, list[str]]]) -> Path:
    """A project (the session's cwd) beside `outside/`, and a fake home; returns the project."""
    project = root / "project"
    _write(project / "notes.md", "# notes\nsome text\n")
    _write(project / "src" / "app.py", "print('hi')\n")
    _write(project / "build" / "out.o", "obj\n")
    _write(project / "secrets" / "key.txt", "token=SECRET\n")
    package = {"name": "demo", "version": "1.0.0", "scripts": {"test": "echo tests-ran"}}
    _write(project / "package.json", json.dumps(package))
    _write(root / "outside" / "keep.txt", "outside\n")
    (project / "link_out").symlink_to(root / "outside")
    (project / "out_file").symlink_to(root / "outside" / "keep.txt")
    (project / "links").mkdir()
    (project / "links" / "key").symlink_to(project / "secrets" / "key.txt")
    files: dict[Scope, Path] = {
        "user": root / "home" / ".toolhost" / "settings.json",
        "project": project / ".toolhost" / "settings.json",
        "local": project / ".toolhost" / "settings.local.json",
    }
    for scope, path in files.items():
        given = rules.get(scope, {})
        by = {b: [r.replace("{root}", str(root)) for r in listed] for b, listed in given.items()}
        _write(path, json.dumps({"permissions": by}))
    return project


class RecordingApprover:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision("deny", "checked")


class UnsureClassifier:
    def __init__(self) -> None:
        self.consulted = 0

    async def __call__(self, _request: PermissionRequest) -> None:
        self.consulted += 1
        return None


@pytest.fixture
def trees(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Makes a fresh root for each run, with HOME at its fake home."""
    monkeypatch.delenv("JUPYTER_TOOLHOST_PERMISSION_MODE", raising=False)
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)

    def fresh(name: str) -> Path:
        root = tmp_path / name
        monkeypatch.setenv("HOME", str(root / "home"))
        return root

    yield fresh


def new_session(project: Path, mode: PermissionMode, approver: RecordingApprover) -> Session:
    return Session(
        tools=[*builtin_tools(cwd=project), MCP_TOOL],
        model=AnthropicModel(base_url="http://127.0.0.1:9", api_key="unused"),
        model_id="claude-sonnet-4-5",
        permission_mode=mode,
        trust_folder=True,  # the folder's settings are the test's own
        cwd=project,
        approver=approver,
        write_transcript=False,
    )


def _text(result: ToolResult) -> str:
    content = result.content
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


@dataclass
class Outcome:
    behavior: Behavior
    result: ToolResult
    asked: list[ApprovalRequest]
    classified: int


async def real_call(
    session: Session, approver: RecordingApprover, tool: str, input: Mapping[str, Any]
) -> Outcome:
    """The call through the session's real pipeline; what happened to it."""
    engine = session._loop.pipeline.can_use_tool
    assert isinstance(engine, PermissionEngine)
    classifier = UnsureClassifier()
    engine.classifier = classifier
    call = ToolCall(f"toolu_{uuid.uuid4().hex[:20]}", tool, dict(input))
    result = await session._loop.pipeline.run(call, session.context)
    if approver.asked:
        behavior: Behavior = "ask"
    elif isinstance(result.decision, PermissionAllow):
        behavior = "allow"
    else:
        assert result.is_error and (
            result.decision is None or isinstance(result.decision, PermissionDeny)
        )
        behavior = "deny"
    return Outcome(behavior, result, list(approver.asked), classifier.consulted)


def disagreements(report: CheckReport, mode: PermissionMode, done: Outcome) -> list[str]:
    """How the check of `mode` differs from what the call did (empty when they agree)."""
    said = report.mode(mode)
    found = []
    if said.behavior != done.behavior:
        found.append(
            f"check said {said.behavior}, the call did {done.behavior}: {_text(done.result)}"
        )
    elif said.behavior == "ask":
        asked = done.asked[0]
        if (said.message, said.reason) != (asked.message, asked.reason):
            found.append(f"asked {asked.message!r} ({asked.reason}), check: {said.message!r}")
        safety = asked.reason is not None and asked.reason.kind == "safety"
        expected_rules = () if safety else (asked.suggested_rules or (asked.tool_name,))
        if said.suggested_rules != expected_rules:
            found.append(f"Always allow: call {expected_rules}, check {said.suggested_rules}")
    elif said.behavior == "deny":
        if f"<tool_use_error>{said.message}</tool_use_error>" != _text(done.result):
            found.append(f"denied with {_text(done.result)!r}, check: {said.message!r}")
    else:
        decision = done.result.decision
        assert isinstance(decision, PermissionAllow)
        if decision.reason != said.reason:
            found.append(f"allowed by {decision.reason}, check: {said.reason}")
    if said.classifier_consulted != bool(done.classified):
        found.append(
            f"classifier consulted: call {done.classified}, check {said.classifier_consulted}"
        )
    return found


def _filled(given: Mapping[str, Any] | str, root: Path) -> Mapping[str, Any] | str:
    if isinstance(given, str):
        return given.replace("{root}", str(root))
    return {
        k: v.replace("{root}", str(root)) if isinstance(v, str) else v for k, v in given.items()
    }


# ── the comparison ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_check_agrees_with_the_real_call_in_every_mode(
    case: Case, trees: Callable[[str], Path]
):
    problems: list[str] = []
    for mode in PERMISSION_MODES:
        root = trees(mode)
        project = make_tree(root, case.rules)
        approver = RecordingApprover()
        session = new_session(project, "bypassPermissions" if case.setup else mode, approver)
        try:
            for tool, input in case.setup:
                ran = await real_call(session, approver, tool, input)
                assert ran.behavior == "allow" and not ran.result.is_error, _text(ran.result)
            session.set_mode(mode)
            report = session.check(case.tool, _filled(case.input, root))
            assert report.current_mode == mode
            assert [m.mode for m in report.modes] == list(PERMISSION_MODES)
            done = await real_call(session, approver, case.tool, report.input)
        finally:
            await session.close()
        problems.extend(f"{mode}: {p}" for p in disagreements(report, mode, done))
        if "token=SECRET" in _text(done.result):
            problems.append(f"{mode}: the denied file was read")
        want = case.expect.get(mode)
        if want is not None and report.mode(mode).behavior != want:
            problems.append(f"{mode}: expected {want}, check said {report.mode(mode).behavior}")
    assert problems == []


def test_the_table_covers_enough_cases_and_every_mode():
    assert len(CASES) >= 30
    assert len(CASES) * len(PERMISSION_MODES) >= 180


# ── the parts around the comparison ──────────────────────────────────────────────────────


def test_a_string_goes_to_the_field_the_tool_checks(trees: Callable[[str], Path]):
    project = make_tree(trees("fields"), {})
    session = new_session(project, "default", RecordingApprover())
    assert session.check("Bash", "ls").input == {"command": "ls"}
    assert session.check("Glob", "*.md").input == {"pattern": "*.md"}
    # Edit has three required text fields: the string goes to the one its path predicate reads
    assert session.check("Edit", "notes.md").input == {
        "file_path": "notes.md",
        "old_string": "",
        "new_string": "",
    }
    nb = session.check("NotebookEdit", "a.ipynb").input
    assert nb["notebook_path"] == "a.ipynb"


def test_unknown_tools_and_ambiguous_strings_are_clear_errors(trees: Callable[[str], Path]):
    project = make_tree(trees("errors"), {})
    session = new_session(project, "default", RecordingApprover())
    with pytest.raises(CheckError, match=r"Unknown tool 'bash'\. Did you mean Bash\?"):
        session.check("bash", "ls")
    with pytest.raises(CheckError, match=r"Did you mean Read\b"):
        session.check("Raed", "notes.md")
    two = build_tool(
        name="pair",
        input_model=type("PairIn", (BaseModel,), {"__annotations__": {"a": str, "b": str}}),
        call=lambda i, c: "ok",
        description="two fields",
    )
    session.set_tools([*session.tools, two])
    with pytest.raises(CheckError, match=r"several text fields \(a, b\): give its input as JSON"):
        session.check("pair", "x")
    assert session.check("pair", {"a": "x", "b": "y"}).current.behavior == "ask"


def test_the_report_names_rule_file_scope_and_what_always_allow_adds(
    trees: Callable[[str], Path],
):
    root = trees("report")
    rules = _r(local={"allow": ["Bash(npm run test:*)"]}, project={"deny": ["Bash(curl:*)"]})
    project = make_tree(root, rules)
    session = new_session(project, "default", RecordingApprover())
    allowed = session.check("Bash", "npm run test").current
    assert (allowed.behavior, allowed.rule, allowed.scope) == (
        "allow",
        "Bash(npm run test:*)",
        "local",
    )
    assert allowed.settings_file == str(project / ".toolhost" / "settings.local.json")
    denied = session.check("Bash", "ls && curl -s http://127.0.0.1:9").current
    assert (denied.behavior, denied.rule, denied.scope) == ("deny", "Bash(curl:*)", "project")

    report = session.check("Bash", "rm -rf build && ls > out.txt")
    assert report.current.suggested_rules == ("Bash(rm -rf build)", "Edit(out.txt)")
    assert report.mode("acceptEdits").suggested_rules == ("Bash(rm -rf build)",)
    assert report.mode("auto").classifier_consulted
    assert report.shell is not None
    # (tree-sitter-bash puts `> out.txt` on the whole `a && b` list: a command of its own)
    [rm, ls, redirect] = report.shell
    assert (rm.program, rm.paths, rm.read_only) == ("rm", ("build",), False)
    assert (ls.program, ls.read_only) == ("ls", True)
    assert (redirect.program, redirect.source_text, redirect.writes) == ("", "", ("out.txt",))
    assert "Always allow would add: Bash(rm -rf build), Edit(out.txt) (default, auto)" in (
        report.notes
    )
    outside = session.check("Bash", "cat $(echo notes.md) ../outside/keep.txt")
    assert outside.shell is not None
    notes = [n for c in outside.shell for n in c.notes]
    assert "outside the working directories: ../outside/keep.txt" in notes
    assert "an operand or target is only known when it runs" in notes
    assert "runs inside a command substitution" in notes


def test_pre_tool_use_hooks_are_named_not_run(trees: Callable[[str], Path]):
    project = make_tree(trees("hooks"), {})
    ran: list[str] = []

    def guard(_input: Any) -> None:
        ran.append("ran")

    session = new_session(project, "default", RecordingApprover())
    session._loop.pipeline.hooks.add("PreToolUse", guard, matcher="Bash", source="guard.sh")
    report = session.check("Bash", "ls")
    assert ran == [] and report.hooks == ("guard.sh",)
    assert any("not run by a check" in n and "guard.sh" in n for n in report.notes)
    assert session.check("Read", "notes.md").hooks == ()


def test_a_session_with_its_own_can_use_tool_cannot_be_checked(tmp_path: Path):
    async def anything(request: PermissionRequest) -> PermissionResult:
        return PermissionAllow()

    session = Session(
        model=AnthropicModel(base_url="http://127.0.0.1:9", api_key="unused"),
        cwd=tmp_path,
        can_use_tool=anything,
        load_settings=False,
        write_transcript=False,
    )
    with pytest.raises(CheckError, match="its own can_use_tool"):
        session.check("Bash", "ls")


def test_the_display_has_a_row_per_mode_the_shell_parse_and_the_notes(
    trees: Callable[[str], Path],
):
    project = make_tree(trees("display"), SECRETS)
    session = new_session(project, "default", RecordingApprover())
    shown = check_display(session.check("Bash", "rm -rf build && ls"), cwd=str(project))
    assert isinstance(shown, Displays) and len(shown.parts) == 3
    table, shell, notes = (part.data[MIME_TYPE] for part in shown.parts)
    assert table["columns"] == ["mode", "decision", "reason", "rule", "settings file"]
    assert [row[:2] for row in table["rows"]] == [
        ["default (now)", "ask"],
        ["acceptEdits", "ask"],
        ["bypassPermissions", "allow"],
        ["dontAsk", "deny"],
        ["plan", "deny"],
        ["auto", "ask"],
    ]
    assert [row[:2] for row in shell["rows"]] == [["rm -rf build", "rm"], ["ls", "ls"]]
    assert "Always allow would add: Bash(rm -rf build)" in notes["text"]
    denied = check_display(session.check("Read", "secrets/key.txt"), cwd=str(project))
    first = denied.parts[0].data[MIME_TYPE]["rows"][0]
    assert first == [
        "default (now)",
        "deny",
        "deny rule Read(./secrets/**)",
        "Read(./secrets/**)",
        ".toolhost/settings.json (project)",
    ]
    assert "deny rule Read(./secrets/**)" in repr(denied)


@pytest.mark.parametrize(
    ("line", "tool", "words", "flags"),
    [
        ('check Bash "rm -rf build && ls"', "Bash", ("rm -rf build && ls",), frozenset()),
        ("check Bash rm -rf build && ls", "Bash", ("rm -rf build && ls",), frozenset()),
        ("check Bash echo 'a b' > out.txt", "Bash", ("echo 'a b' > out.txt",), frozenset()),
        ("check Read secrets/key.txt", "Read", ("secrets/key.txt",), frozenset()),
        ("check Read 'my notes.md'", "Read", ("my notes.md",), frozenset()),
        (
            'check mcp__github__create_issue \'{"title": "x"}\'',
            "mcp__github__create_issue",
            ('{"title": "x"}',),
            frozenset({"--json"}),
        ),
        (
            'check Write {"file_path": "a b.txt"}',
            "Write",
            ('{"file_path": "a b.txt"}',),
            {"--json"},
        ),
    ],
)
def test_check_lines_are_parsed(line: str, tool: str, words: tuple[str, ...], flags: Any):
    assert parse_command(line) == Command("check", tool, frozenset(flags), words)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("check", "needs a tool and its input"),
        ("check Bash", "needs a tool and its input"),
        ("check Write {nope", "not valid JSON"),
        ("check Write '{\"a\": 1'", "not valid JSON"),
    ],
)
def test_bad_check_lines_say_what_is_expected(line: str, message: str):
    with pytest.raises(UsageError, match=message):
        parse_command(line)


_JSON_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_JSON_INPUT = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.one_of(_JSON_TEXT, st.integers(), st.booleans(), st.lists(_JSON_TEXT, max_size=3)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_INPUT, separators=st.sampled_from([(",", ":"), (", ", ": "), (",", ": ")]))
def test_any_json_object_a_person_types_is_read_whole(
    value: dict[str, Any], separators: tuple[str, str]
):
    typed = json.dumps(value, separators=separators, ensure_ascii=False)
    command = parse_command(f"check Bash {typed}")
    assert "--json" in command.flags
    assert json.loads(command.words[0]) == value


# ── in a real kernel ─────────────────────────────────────────────────────────────────────


def _payloads(run: Any) -> list[dict[str, Any]]:
    return [
        m["content"]["data"][MIME_TYPE]
        for m in run.messages
        if m["msg_type"] in ("display_data", "execute_result") and MIME_TYPE in m["content"]["data"]
    ]


@pytest.mark.timeout(120)
def test_agent_check_in_a_kernel_shows_the_modes_the_parse_and_always_allow(kernel: Kernel):
    run = kernel.run('%agent check Bash "rm -rf build && ls"')
    assert run.status == "ok", run.text()
    table, shell, notes = _payloads(run)
    assert table["kind"] == "check"
    assert table["title"] == "permission check: Bash rm -rf build && ls"
    rows = {row[0]: row[1:] for row in table["rows"]}
    why = (
        "no allow rule names `rm -rf build`. To allow it from now on, add Bash(rm -rf build) "
        'to permissions.allow in .toolhost/settings.json ("Always allow" saves it to the '
        "local one)"
    )
    assert rows["default (now)"] == ["ask", why, "", ""]
    assert rows["bypassPermissions"][0] == "allow"
    assert rows["dontAsk"][0] == "deny" and rows["plan"][0] == "deny"
    assert rows["auto"] == ["ask", f"{why} (no classifier answer)", "", ""]
    assert [r[:2] for r in shell["rows"]] == [["rm -rf build", "rm"], ["ls", "ls"]]
    assert (
        "Always allow would add: Bash(rm -rf build) (default, acceptEdits, auto)" in notes["text"]
    )
    assert "rm -rf build" in run.text() and "Always allow would add" in run.text()

    kernel.run("%agent deny 'Read(./secrets/**)'")
    denied = kernel.run("%agent check Read secrets/key.txt")
    [table, notes] = _payloads(denied)
    assert {row[1] for row in table["rows"]} == {"deny"}
    assert table["rows"][0][3:] == ["Read(./secrets/**)", "session"]

    written = kernel.run('%agent check Write {"file_path": "a.txt", "content": "x"}')
    assert _payloads(written)[0]["rows"][1][:2] == ["acceptEdits", "allow"]

    unknown = kernel.run("%agent check Nope ls")
    assert unknown.status == "error" and "Unknown tool 'Nope'" in unknown.text()


@pytest.mark.timeout(120)
def test_agent_lines_reach_the_magic_as_typed(kernel: Kernel):
    """IPython expands `{...}` and `$name` in a line magic's line unless told not to: JSON,
    a rule or a shell command must arrive as the person typed it."""
    kernel.run("command = 'expanded'")
    tight = kernel.run('%agent check Bash {"command":"rm -rf x"}')
    assert tight.status == "ok", tight.text()
    assert _payloads(tight)[0]["title"] == "permission check: Bash rm -rf x"
    braces = kernel.run("%agent check Bash echo {command} $command")
    assert braces.status == "ok", braces.text()
    assert _payloads(braces)[0]["title"] == "permission check: Bash echo {command} $command"
    help_text = kernel.run("%agent help check").text()
    assert "INPUT is JSON ({...})" in help_text and "Ellipsis" not in help_text
