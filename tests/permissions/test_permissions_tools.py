"""Tools of every class the permission system distinguishes, built with the real `build_tool`,
plus a helper that runs the pure `decide()` for one call. Shared by the permission tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.core.types import PermissionMode, PermissionResult, RuleBehavior
from jupyter_toolhost.permissions import PathResolver, PureResolver, compile_rules, decide
from jupyter_toolhost.shell.commands import analyze
from jupyter_toolhost.shell.safety import is_read_only


class FileIn(BaseModel):
    file_path: str
    content: str = ""


class SearchIn(BaseModel):
    pattern: str
    path: str = "."


class ShellIn(BaseModel):
    command: str


class FetchIn(BaseModel):
    url: str
    prompt: str = ""


class AnyIn(BaseModel):
    value: str = ""


def _noop(_input: Any, _context: Any) -> str:
    return "ok"


def _shell_read_only(data: ShellIn) -> bool:
    analysis = analyze(data.command)
    return not analysis.error and all(is_read_only(c) for c in analysis.commands)


READ = build_tool(
    name="Read",
    input_model=FileIn,
    call=_noop,
    description="read a file",
    read_only=True,
    concurrency_safe=True,
    get_path=lambda i: i.file_path,
)
GREP = build_tool(
    name="Grep",
    input_model=SearchIn,
    call=_noop,
    description="search files",
    read_only=True,
    get_path=lambda i: i.path,
)
EDIT = build_tool(
    name="Edit", input_model=FileIn, call=_noop, description="edit", get_path=lambda i: i.file_path
)
WRITE = build_tool(
    name="Write",
    input_model=FileIn,
    call=_noop,
    description="write",
    get_path=lambda i: i.file_path,
)
SHELL = build_tool(
    name="Bash",
    input_model=ShellIn,
    call=_noop,
    description="run a shell command",
    read_only=_shell_read_only,
    shell_command=lambda i: i.command,
)
TERMINAL = build_tool(
    name="Terminal",
    input_model=ShellIn,
    call=_noop,
    description="another tool that runs shell commands",
    shell_command=lambda i: i.command,
)
WEB = build_tool(
    name="WebFetch",
    input_model=FetchIn,
    call=_noop,
    description="fetch a URL",
    read_only=True,
    get_url=lambda i: i.url,
)
MCP = build_tool(
    name="mcp__github__create_issue",
    input_model=AnyIn,
    call=_noop,
    description="create an issue",
    is_mcp=True,
)
CUSTOM = build_tool(name="deploy", input_model=AnyIn, call=_noop, description="deploy")
CUSTOM_READ_ONLY = build_tool(
    name="lookup", input_model=AnyIn, call=_noop, description="lookup", read_only=True
)
ALL_TOOLS: tuple[Tool[Any], ...] = (
    READ,
    GREP,
    EDIT,
    WRITE,
    SHELL,
    TERMINAL,
    WEB,
    MCP,
    CUSTOM,
    CUSTOM_READ_ONLY,
)
TOOLS_BY_NAME = {t.name: t for t in ALL_TOOLS}

RuleMap = Mapping[str, Mapping[RuleBehavior, Sequence[str]]]


def run_decide(
    tool: Tool[Any],
    raw: Mapping[str, Any],
    *,
    cwd: str = "/home/user/project",
    rules: RuleMap | None = None,
    mode: PermissionMode = "default",
    resolver: PathResolver | None = None,
    working_dirs: Sequence[str] = (),
) -> PermissionResult:
    """The pure decision for one call, with rules given as source → behaviour → strings."""
    resolver = resolver or PureResolver(home="/home/user")
    compiled = compile_rules(rules or {}, cwd=cwd, home=resolver.home())
    return decide(
        tool=tool,
        input=tool.input_model.model_validate(dict(raw)),
        rules=compiled,
        mode=mode,
        cwd=cwd,
        resolver=resolver,
        working_dirs=working_dirs,
    )


def test_the_tool_classes_declare_what_the_permission_system_reads() -> None:
    assert READ.get_path is not None and READ.flag(READ.is_read_only, FileIn(file_path="a"))
    assert EDIT.get_path is not None and not EDIT.flag(EDIT.is_read_only, FileIn(file_path="a"))
    assert SHELL.shell_command is not None and SHELL.shell_command(ShellIn(command="ls")) == "ls"
    assert SHELL.flag(SHELL.is_read_only, ShellIn(command="ls -la"))
    assert not SHELL.flag(SHELL.is_read_only, ShellIn(command="rm -rf x"))
    assert WEB.get_url is not None and MCP.is_mcp
