"""The tool definition: `Tool`, `build_tool()` and the `@tool` decorator.

Every field of the seed's `ToolDef` (section 3.2) has a Pythonic counterpart here. Defaults
fail closed: a tool is not read-only, not concurrency-safe and not deferred unless it says
so. It is destructive (its approval prompt warns that the call may not be undone) only when
it says so too: that flag grants nothing, and a warning on every call would be noise. The
JSON schema sent to the API is derived from the pydantic input model on first use, not at
definition time.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

from .context import ToolUseContext
from .docstrings import parse_docstring
from .text import one_line
from .types import (
    ContentBlock,
    DecisionReason,
    InterruptBehavior,
    PermissionAllow,
    PermissionResult,
    ToolResultContent,
)

SUMMARY_CHARS = 120
"""The longest one-line summary of a call (cards, approval prompts, decision records)."""
DEFAULT_MAX_RESULT_SIZE_CHARS = 50_000
"""The default per-result threshold; a tool's effective one is min(declared, this)."""

InputT = TypeVar("InputT", bound=BaseModel)
Predicate = Callable[[Any], bool]
ToolFunction = Callable[..., Any]

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool may return instead of a bare value, to also change the session's state.

    `context_modifier` runs after the call (after the whole batch, in call order, when the
    call ran concurrently with others), so concurrent calls never race on shared state.
    `displays` are rich outputs for people (a figure, a table), as Jupyter mimebundles
    ``{"data": {mime: value}, "metadata": {...}}``; they are never sent to the model.
    """

    data: Any
    context_modifier: Callable[[ToolUseContext], None] | None = None
    displays: tuple[dict[str, Any], ...] = ()


def _never(_input: Any) -> bool:
    return False


def _always_enabled() -> bool:
    return True


def _block() -> InterruptBehavior:
    return "block"


async def _allow(input: Any, _context: ToolUseContext) -> PermissionResult:
    return PermissionAllow(updated_input=None)


async def no_permission_needed(input: Any, _context: ToolUseContext) -> PermissionResult:
    """`check_permissions` for tools whose effects stay inside the session (a checklist, a
    sub-agent whose own calls are checked, a message to one): the permission engine lets
    them run in every mode without asking; deny and ask rules and hooks still apply."""
    return PermissionAllow(reason=DecisionReason("tool", "changes nothing outside the session"))


def default_map_result(output: Any) -> ToolResultContent:
    """Turn a tool's output into tool_result content: text, or content blocks as given."""
    if isinstance(output, ToolOutput):
        output = output.data
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json(indent=2)
    if (
        isinstance(output, list)
        and output
        and all(isinstance(item, dict) and "type" in item for item in cast(list[object], output))
    ):
        return cast(list[ContentBlock], output)
    if isinstance(output, dict | list | tuple | int | float | bool):
        return json.dumps(output, ensure_ascii=False, indent=2, default=str)
    return str(output)


@dataclass(frozen=True, slots=True)
class McpName:
    """The names of an MCP tool, kept apart: its `name` is ``mcp__<server>__<tool>``."""

    server: str
    """The server as tool names and permission rules name it (renamed when its configured
    name would make tool names ambiguous: see `mcp.naming`)."""
    tool: str
    """The tool part of the tool's name."""
    configured_server: str
    """The server's name in the settings (the same as `server` unless it was renamed)."""
    remote_tool: str
    """The tool's own name on its server."""


@dataclass(eq=False)
class Tool(Generic[InputT]):
    """A tool the model can call. Build one with `build_tool()` or `@tool`."""

    name: str
    input_model: type[InputT]
    call: Callable[[InputT, ToolUseContext], Any]
    """The implementation; may be sync (run in a worker thread) or async."""
    description: Callable[[], str]
    """The short description sent in the API's `tools` array."""
    prompt: Callable[[], str]
    """Detailed usage guidance, assembled into the system prompt."""
    max_result_size_chars: float = DEFAULT_MAX_RESULT_SIZE_CHARS
    search_hint: str | None = None
    strict: bool = False
    output_model: type[BaseModel] | None = None
    is_enabled: Callable[[], bool] = _always_enabled
    is_read_only: Predicate = _never
    is_destructive: Predicate = _never
    """Whether a call may not be undone (deletes, overwrites, sends); an approval prompt
    for it says so. It never allows or denies anything by itself."""
    is_concurrency_safe: Predicate = _never
    should_defer: bool = False
    always_load: bool = False
    check_permissions: Callable[[InputT, ToolUseContext], Any] = _allow
    """Tool-specific permission logic (sync or async); returns a `PermissionResult`."""
    interrupt_behavior: Callable[[], InterruptBehavior] = _block
    user_facing_name: Callable[[InputT | None], str] | None = None
    backfill_observable_input: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Adds derived fields that hooks and the UI see; `call()` never sees them."""
    render_tool_use: Callable[[InputT], str] | None = None
    """A one-line summary of the input for cards ("ls -la", "src/app.py")."""
    render_code: Callable[[InputT], tuple[str, str] | None] | None = None
    """The code the call runs, as (language, source), for front ends to show highlighted:
    ``("python", code)``, ``("shell", command)``. None for tools that run no code."""
    map_result: Callable[[Any], ToolResultContent] = default_map_result
    get_path: Callable[[InputT], str | None] | None = None
    """The file or directory the call touches, for path permission rules (reads when the
    call is read-only, writes otherwise). None for tools that touch no files."""
    cancels_siblings_on_error: bool = False
    """When a call of this tool fails, cancel the calls running beside it in its batch."""
    is_mcp: bool = False
    mcp_name: McpName | None = None
    """An MCP tool's server and tool, as two names (permission rules match these, never a
    split of `name`)."""
    annotations_trusted: bool = False
    """An MCP tool whose server is configured with ``trustAnnotations``: only then does its
    ``readOnlyHint`` count for permissions (it always counts for concurrency)."""
    shell_command: Callable[[InputT], str | None] | None = None
    """The shell command line the call runs, for ``Bash(...)`` permission rules. None for tools
    that run no shell command."""
    get_url: Callable[[InputT], str | None] | None = None
    """The URL the call fetches, for ``WebFetch(domain:...)`` permission rules."""
    rule_content: Callable[[InputT], str | None] | None = None
    """What a ``Name(specifier)`` rule of this tool names in a call (the Skill tool: the
    skill's name, so ``Skill(review)`` allows or denies that skill). None: such rules name
    nothing of this tool."""
    sandboxed: Callable[[ToolUseContext], bool] | None = None
    """Whether the call will run where read-denied paths are not visible (a sandbox such as
    Bash's bubblewrap). None means not sandboxed; ask through `runs_sandboxed`."""
    unconfined: bool = False
    """Runs code in this process, out of reach of path rules and the sandboxes."""
    input_schema_override: dict[str, Any] | None = None
    """A JSON schema sent to the API as is, instead of one derived from `input_model` (MCP
    tools pass their server's schema through and validate with a permissive model)."""
    on_session_start: Callable[[ToolUseContext], None] | None = None
    """Called once with a session's context when the session takes the tool into its pool
    (when it starts, or through `set_tools`): for what the tool reads once per session,
    such as Bash's sandbox settings. What outlives a prompt stops through the context's
    `Lifetime` instead. None: nothing to do."""
    extras: dict[str, Any] = field(default_factory=dict[str, Any])
    _schema: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _schema_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _TOOL_NAME.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} must be 1-128 letters, digits, '_' or '-' "
                "(the Messages API rejects anything else)"
            )

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the input, derived from `input_model` once, on first use."""
        if self.input_schema_override is not None:
            return self.input_schema_override
        if self._schema is None:
            with self._schema_lock:
                if self._schema is None:
                    self._schema = _api_schema(self.input_model)
        return self._schema

    def display_name(self, input: InputT | None = None) -> str:
        """The name shown to people (the seed's `userFacingName`)."""
        if self.user_facing_name is None:
            return self.name
        try:
            return self.user_facing_name(input)
        except Exception:
            return self.name

    def summarize(self, input: InputT) -> str:
        """A short, single-line summary of a parsed input, for cards and approval prompts
        (at most `SUMMARY_CHARS`, a cut marked with "…")."""
        if self.render_tool_use is not None:
            try:
                return one_line(self.render_tool_use(input), SUMMARY_CHARS)
            except Exception:
                pass
        data = input.model_dump(exclude_none=True)
        first = next((v for v in data.values() if isinstance(v, str)), None)
        text = first if first is not None else json.dumps(data, ensure_ascii=False, default=str)
        return one_line(text, SUMMARY_CHARS)

    def code_of(self, input: InputT) -> tuple[str, str] | None:
        """The (language, source) the call runs, or None (also when `render_code` raises)."""
        if self.render_code is None:
            return None
        try:
            code = self.render_code(input)
        except Exception:
            return None
        if code is None:
            return None
        language, source = code
        return str(language), str(source)

    def to_api(self) -> dict[str, Any]:
        """The tool definition as the Messages API's `tools` array wants it."""
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description(),
            "input_schema": self.input_schema,
        }
        if self.strict:
            definition["strict"] = True
        return definition

    def runs_sandboxed(self, context: ToolUseContext) -> bool:
        """Ask `sandboxed`; no predicate, or one that raises, means not sandboxed."""
        if self.sandboxed is None:
            return False
        try:
            return bool(self.sandboxed(context))
        except Exception:
            return False

    def flag(self, predicate: Predicate, input: Any) -> bool:
        """Ask a flag predicate; one that raises counts as False (fail closed)."""
        try:
            return bool(predicate(input))
        except Exception:
            return False


def _api_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _as_predicate(value: bool | Predicate) -> Predicate:
    if callable(value):
        return value
    flag = bool(value)
    return lambda _input: flag


def _as_text(value: str | Callable[[], str] | None, fallback: str) -> Callable[[], str]:
    if value is None:
        return lambda: fallback
    if callable(value):
        return value
    text = value
    return lambda: text


def build_tool(
    *,
    name: str,
    input_model: type[InputT],
    call: Callable[[InputT, ToolUseContext], Any],
    description: str | Callable[[], str],
    prompt: str | Callable[[], str] | None = None,
    max_result_size_chars: float = DEFAULT_MAX_RESULT_SIZE_CHARS,
    search_hint: str | None = None,
    strict: bool = False,
    output_model: type[BaseModel] | None = None,
    is_enabled: Callable[[], bool] = _always_enabled,
    read_only: bool | Predicate = False,
    destructive: bool | Predicate = False,
    concurrency_safe: bool | Predicate = False,
    should_defer: bool = False,
    always_load: bool = False,
    check_permissions: Callable[[InputT, ToolUseContext], Any] | None = None,
    interrupt_behavior: InterruptBehavior | Callable[[], InterruptBehavior] = "block",
    user_facing_name: str | Callable[[InputT | None], str] | None = None,
    backfill_observable_input: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    render_tool_use: Callable[[InputT], str] | None = None,
    render_code: Callable[[InputT], tuple[str, str] | None] | None = None,
    map_result: Callable[[Any], ToolResultContent] = default_map_result,
    get_path: Callable[[InputT], str | None] | None = None,
    cancels_siblings_on_error: bool = False,
    is_mcp: bool = False,
    mcp_name: McpName | None = None,
    annotations_trusted: bool = False,
    shell_command: Callable[[InputT], str | None] | None = None,
    get_url: Callable[[InputT], str | None] | None = None,
    rule_content: Callable[[InputT], str | None] | None = None,
    sandboxed: Callable[[ToolUseContext], bool] | None = None,
    unconfined: bool = False,
    input_schema_override: dict[str, Any] | None = None,
    on_session_start: Callable[[ToolUseContext], None] | None = None,
    extras: dict[str, Any] | None = None,
) -> Tool[InputT]:
    """Build a `Tool`, filling in the fail-closed defaults for everything not given.

    Flags (`read_only`, `destructive`, `concurrency_safe`) take a bool or a predicate of the
    parsed input, so a shell tool can be safe for `ls` and unsafe for `rm`.
    """
    described = _as_text(description, name)
    behavior = interrupt_behavior
    facing = user_facing_name
    return Tool(
        name=name,
        input_model=input_model,
        call=call,
        description=described,
        prompt=_as_text(prompt, "") if prompt is not None else described,
        max_result_size_chars=max_result_size_chars,
        search_hint=search_hint,
        strict=strict,
        output_model=output_model,
        is_enabled=is_enabled,
        is_read_only=_as_predicate(read_only),
        is_destructive=_as_predicate(destructive),
        is_concurrency_safe=_as_predicate(concurrency_safe),
        should_defer=should_defer,
        always_load=always_load,
        check_permissions=check_permissions or _allow,
        interrupt_behavior=behavior if callable(behavior) else (lambda: behavior),
        user_facing_name=(lambda _input: facing) if isinstance(facing, str) else facing,
        backfill_observable_input=backfill_observable_input,
        render_tool_use=render_tool_use,
        render_code=render_code,
        map_result=map_result,
        get_path=get_path,
        cancels_siblings_on_error=cancels_siblings_on_error,
        is_mcp=is_mcp or mcp_name is not None,
        mcp_name=mcp_name,
        annotations_trusted=annotations_trusted,
        shell_command=shell_command,
        get_url=get_url,
        rule_content=rule_content,
        sandboxed=sandboxed,
        unconfined=unconfined,
        input_schema_override=input_schema_override,
        on_session_start=on_session_start,
        extras=dict(extras or {}),
    )


def start_session(tools: Iterable[Tool[Any]], context: ToolUseContext) -> None:
    """Tell each tool that a session (its `context`) took it into its pool: run its
    `on_session_start`. The session calls this; it never asks which tool needs it."""
    for tool in tools:
        if tool.on_session_start is not None:
            tool.on_session_start(context)


# ── @tool ────────────────────────────────────────────────────────────────────────────────

_registry_lock = threading.Lock()
_registered: dict[str, Tool[Any]] = {}


def registered_tools() -> list[Tool[Any]]:
    """Tools defined with `@tool` in this process, newest definition of each name."""
    with _registry_lock:
        return list(_registered.values())


def unregister_tool(name: str) -> None:
    with _registry_lock:
        _registered.pop(name, None)


def _input_model_for(fn: ToolFunction, name: str) -> tuple[type[BaseModel], str | None, str]:
    """Build a pydantic model from a function's signature; returns (model, context param,
    description)."""
    signature = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)
    doc = parse_docstring(fn.__doc__)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"@tool {name}: *args/**kwargs cannot be described to the model")
        annotation = hints.get(param.name, Any)
        if annotation is ToolUseContext:
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            Field(default, description=doc.parameters.get(param.name)),
        )
    model_name = "".join(part.capitalize() for part in re.split(r"[_\-]", name)) + "Input"
    model = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_param, doc.description


def _function_caller(
    fn: ToolFunction, context_param: str | None
) -> Callable[[BaseModel, ToolUseContext], Any]:
    is_async = inspect.iscoroutinefunction(fn)

    def arguments(input: BaseModel, context: ToolUseContext) -> dict[str, Any]:
        kwargs = {key: getattr(input, key) for key in type(input).model_fields}
        if context_param is not None:
            kwargs[context_param] = context
        return kwargs

    if is_async:

        async def call_async(input: BaseModel, context: ToolUseContext) -> Any:
            return await cast(Callable[..., Awaitable[Any]], fn)(**arguments(input, context))

        return call_async

    def call_sync(input: BaseModel, context: ToolUseContext) -> Any:
        return fn(**arguments(input, context))

    return call_sync


@overload
def tool(fn: ToolFunction, /) -> Tool[Any]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool = False,
    destructive: bool = False,
    should_defer: bool = False,
    always_load: bool = False,
    search_hint: str | None = None,
    max_result_size_chars: float = DEFAULT_MAX_RESULT_SIZE_CHARS,
    interrupt_behavior: InterruptBehavior = "block",
    render_code: Callable[[Any], tuple[str, str] | None] | None = None,
    register: bool = True,
) -> Callable[[ToolFunction], Tool[Any]]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool = False,
    destructive: bool = False,
    should_defer: bool = False,
    always_load: bool = False,
    search_hint: str | None = None,
    max_result_size_chars: float = DEFAULT_MAX_RESULT_SIZE_CHARS,
    interrupt_behavior: InterruptBehavior = "block",
    render_code: Callable[[Any], tuple[str, str] | None] | None = None,
    register: bool = True,
) -> Tool[Any] | Callable[[ToolFunction], Tool[Any]]:
    """Make a tool from a plain function: its type hints become the input schema, its
    docstring the description (its parameter sections, in Google, NumPy, Sphinx or Epydoc
    style, become field descriptions: see `docstrings`).

    A parameter annotated `ToolUseContext` receives the call's context. Sync functions run
    in a worker thread (a pool as large as the concurrency cap); a thread cannot be killed,
    so a long sync function should check `context.cancelled()` between steps and return
    early when it is set (an interrupt, a failed sibling; for a "block" tool, once its
    grace after an interrupt is over). Like every tool, the result is not read-only and
    not concurrency-safe unless the options say so. `render_code(input)` may name the code
    a call runs, as (language, source), for front ends to show. With `register` (the
    default) the tool is recorded so the next `%%agent` cell of the kernel offers it to the
    model; defining a tool of the same name again replaces it.
    """

    def make(function: ToolFunction) -> Tool[Any]:
        tool_name = name or function.__name__
        model, context_param, doc_text = _input_model_for(function, tool_name)
        text = description or doc_text or tool_name
        built = build_tool(
            name=tool_name,
            input_model=model,
            call=_function_caller(function, context_param),
            description=text,
            read_only=read_only,
            concurrency_safe=concurrency_safe,
            destructive=destructive,
            should_defer=should_defer,
            always_load=always_load,
            search_hint=search_hint,
            max_result_size_chars=max_result_size_chars,
            interrupt_behavior=interrupt_behavior,
            render_code=render_code,
            extras={"function": function},
        )
        if register:
            with _registry_lock:
                _registered[tool_name] = built
        return built

    if fn is not None:
        return make(fn)
    return make
