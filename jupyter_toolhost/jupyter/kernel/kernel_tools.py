"""Tools that only exist in a kernel: PythonExec, ListVariables, InspectVariable.

PythonExec runs code in the user's namespace on the kernel's main thread (its `call` is
async, so the pipeline runs it on the event loop), through the shell's own input
transformations (magics and `!cmd` work), capturing stdout, stderr, rich display output and
the last expression's value. It changes state, so it is neither read-only nor
concurrency-safe, and its own permission check asks.

What it made is shown to people whole (`ToolOutput.displays`: each display's mimebundle, the
value formatted like a cell's Out, and every matplotlib figure the code created, rendered to
PNG and closed so the inline backend does not draw it again after the cell). The model gets
the text of each, plus up to `captured.MAX_IMAGES` PNGs as image blocks, each scaled down to
`MAX_IMAGE_SIDE` pixels and `MAX_IMAGE_BYTES` (with Pillow when it is installed; without it,
an image over the byte cap is left out and the text says so).

ListVariables and InspectVariable only read the namespace: read-only and concurrency-safe,
so they run unasked in every mode. What they may reach is `variable_reach`'s allow-list: the
user's own variables' plain data, never the kernel's objects, and no code run on the way.
pandas and numpy are recognised by their classes' modules, never imported here.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import inspect
import signal
import sys
import threading
import traceback
import types
from collections.abc import Iterator
from typing import Any, cast

from pydantic import BaseModel, Field

from ...core.context import Progress, ToolUseContext
from ...core.tool import Tool, ToolOutput, build_tool
from ...core.types import DecisionReason, PermissionAsk, PermissionResult, ToolError
from .captured import (
    INTERRUPTED_LINE,
    bundle,
    figure_states,
    has_png,
    model_content,
    new_figures,
    plain_text,
    result_bundle,
    streaming_capture,
)
from .variable_reach import (
    KernelState,
    first_doc_line,
    is_array_like,
    is_data,
    is_frame_like,
    lookup,
    plain_attributes,
    reads_as_routine,
    safe_repr,
    user_variables,
)

_REPR_CHARS = 2_000


class PythonExecInput(BaseModel):
    code: str = Field(description="Python code to run in the notebook's namespace.")


class ListVariablesInput(BaseModel):
    pattern: str | None = Field(None, description="Only names matching this glob, e.g. 'df*'.")
    include_callables: bool = Field(False, description="Also list functions and classes.")


class InspectVariableInput(BaseModel):
    name: str = Field(
        description=(
            "A variable name, optionally with .attribute and [key] steps: 'df', "
            "\"df['price']\", 'model.coef_', \"config['db']['host']\"."
        )
    )


PYTHON_EXEC_DESCRIPTION = """Run Python code in the user's Jupyter kernel, in the same namespace as
their notebook cells: variables you define stay defined, and you can use theirs. Returns
what the code printed (stdout, stderr), rich display output as text, and the last
expression's value; matplotlib figures and PNG images it made are shown to you as images
(at most 4) and to the user in the notebook. IPython syntax (magics, !shell) works. Prefer
ListVariables / InspectVariable to look at data without changing anything.

Your code runs in the kernel's own process, outside the shell's sandbox, and no path rule
can see which files it opens. So while any Read or Edit deny rule is in force, every
PythonExec call needs the user's approval in every permission mode (it is refused in
dontAsk and plan mode), and in bypassPermissions and auto mode it always needs approval.
To read or change files, use Read, Edit, Write, Glob, Grep and Bash: they are checked
against the rules and need no approval where the rules allow them."""

LIST_VARIABLES_DESCRIPTION = """List the variables in the user's Jupyter kernel: name, type,
shape or length, and approximate memory. Read-only."""

INSPECT_VARIABLE_DESCRIPTION = """Describe one variable of the user's Jupyter kernel without
changing it: for a DataFrame its shape, dtypes, head and describe(); for an array its shape,
dtype and value range; otherwise its type, length, repr and plain attributes. Read-only.

It reads only the user's own variables' plain data and runs no code: no names starting with
'_', no properties, no modules, and none of the kernel's or the tool host's own objects
(the shell, the kernel, os.environ, In/Out). Use PythonExec (which asks the user) for
anything else."""


def kernel_tools(shell: Any) -> list[Tool[Any]]:
    """The three kernel tools, bound to `shell` (an IPython InteractiveShell)."""

    async def run_python(input: PythonExecInput, context: ToolUseContext) -> ToolOutput:
        return await execute(shell, input.code, progress=context.progress)

    async def python_permissions(
        input: PythonExecInput, context: ToolUseContext
    ) -> PermissionResult:
        return PermissionAsk(
            "Run Python code in the kernel's namespace",
            DecisionReason("tool", "PythonExec changes the kernel's state", "PythonExec"),
        )

    async def list_variables(input: ListVariablesInput, context: ToolUseContext) -> str:
        return variables_table(shell, pattern=input.pattern, callables=input.include_callables)

    async def inspect_variable(input: InspectVariableInput, context: ToolUseContext) -> str:
        value = lookup(shell, input.name)
        return describe(value, name=input.name, state=KernelState.of(shell))

    return [
        build_tool(
            name="PythonExec",
            input_model=PythonExecInput,
            call=run_python,
            description=PYTHON_EXEC_DESCRIPTION,
            check_permissions=python_permissions,
            unconfined=True,
            interrupt_behavior="cancel",
            render_tool_use=lambda i: i.code,  # one line, cut and marked by `summarize`
            render_code=lambda i: ("python", i.code),
        ),
        build_tool(
            name="ListVariables",
            input_model=ListVariablesInput,
            call=list_variables,
            description=LIST_VARIABLES_DESCRIPTION,
            read_only=True,
            concurrency_safe=True,
            render_tool_use=lambda i: i.pattern or "*",
        ),
        build_tool(
            name="InspectVariable",
            input_model=InspectVariableInput,
            call=inspect_variable,
            description=INSPECT_VARIABLE_DESCRIPTION,
            read_only=True,
            concurrency_safe=True,
            render_tool_use=lambda i: i.name,
        ),
    ]


# ── PythonExec ───────────────────────────────────────────────────────────────────────────


async def execute(shell: Any, code: str, *, progress: Any = None) -> ToolOutput:
    """Run `code` like a cell (without history or Out[]): the model's content as `data`
    (text, or text and image blocks), what it showed as `displays` (mimebundles). What it
    prints goes to `progress` as it comes (the card shows the newest lines live); a run an
    interrupt stopped keeps what it printed and ends with `INTERRUPTED_LINE`."""

    def report(tail: tuple[str, ...], lines: int) -> None:
        if progress is not None:
            with contextlib.suppress(Exception):
                said = f"{lines:,} line{'s' * (lines != 1)} printed so far"
                progress(Progress(text=said, tail=tail))

    try:
        source = shell.transform_cell(code)
        body, last = _split_last_expression(source)
    except SyntaxError as exc:
        raise ToolError(f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    namespace = shell.user_ns
    value: Any = None
    failure: str | None = None
    figures_before = figure_states()
    with streaming_capture(shell, report) as captured:
        try:
            with _interruptible():
                if body is not None:
                    await _run(body, namespace)
                if last is not None:
                    value = await _run(last, namespace)
        except KeyboardInterrupt:
            failure = f"KeyboardInterrupt\n{INTERRUPTED_LINE}"
        except Exception as exc:
            failure = _user_traceback(exc)
    parts = []
    if captured.stdout:
        parts.append(f"[stdout]\n{captured.stdout.rstrip()}")
    if captured.stderr:
        parts.append(f"[stderr]\n{captured.stderr.rstrip()}")
    if failure is not None:
        parts += [f"[display]\n{t}" for o in captured.outputs if (t := o.data.get("text/plain"))]
        parts.append(f"[error]\n{failure}")
        raise ToolError("\n\n".join(parts))  # new figures stay open: the cell shows them
    shown = [bundle(output.data, output.metadata) for output in captured.outputs]
    result = result_bundle(shell, value, fallback=_repr(value)) if value is not None else None
    figures = new_figures(figures_before, skip=value if has_png(result) else None)
    parts += [f"[display]\n{text}" for b in (*shown, *figures) if (text := plain_text(b))]
    if result is not None:
        parts.append(f"[result]\n{_cap(plain_text(result) or _repr(value))}")
    displays = (*shown, *([result] if result is not None else []), *figures)
    text = "\n\n".join(parts) if parts else "(no output)"
    return ToolOutput(data=model_content(text, displays), displays=displays)


def _split_last_expression(source: str) -> tuple[types.CodeType | None, types.CodeType | None]:
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(source, filename="<PythonExec>", mode="exec")
    last: types.CodeType | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        expression = ast.Expression(tree.body.pop().value)  # type: ignore[attr-defined]
        last = compile(expression, "<PythonExec>", "eval", flags=flags)
    body = compile(tree, "<PythonExec>", "exec", flags=flags) if tree.body else None
    return body, last


async def _run(code: types.CodeType, namespace: dict[str, Any]) -> Any:
    result = eval(code, namespace)
    if code.co_flags & inspect.CO_COROUTINE:
        result = await result
    return result


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """While user code runs synchronously on the main thread, SIGINT raises there (as in a
    cell); the kernel's own handler is still called so the agent's cell is interrupted too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        if callable(previous):
            with contextlib.suppress(Exception):
                previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _user_traceback(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<PythonExec>"]
    lines = [f"  line {f.lineno}" for f in frames]
    return "\n".join([*lines, "".join(traceback.format_exception_only(exc)).rstrip()])


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return _cap(text)


def _cap(text: str) -> str:
    return text if len(text) <= _REPR_CHARS else text[:_REPR_CHARS] + f"… ({len(text):,} chars)"


# ── ListVariables / InspectVariable ──────────────────────────────────────────────────────


def variables_table(shell: Any, *, pattern: str | None = None, callables: bool = False) -> str:
    """A plain-text table of the user's variables."""
    rows = [("name", "type", "shape/len", "memory")]
    for name, value in sorted(user_variables(shell, callables=callables).items()):
        if pattern and not fnmatch.fnmatchcase(name, pattern):
            continue
        rows.append((name, type(value).__name__, _shape(value), _memory(value)))
    if len(rows) == 1:
        return "No variables" + (f" match {pattern!r}." if pattern else " defined yet.")
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _shape(value: Any) -> str:
    if not is_data(value):
        return ""  # another object's `shape` or `__len__` is its own code
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return "×".join(str(n) for n in shape) or "scalar"
    with contextlib.suppress(Exception):
        if not isinstance(value, str | bytes) and hasattr(value, "__len__"):
            return f"len {len(value)}"
        if isinstance(value, str | bytes):
            return f"len {len(value)}"
    return ""


def _memory(value: Any) -> str:
    if not is_data(value):
        return ""
    size: int | None = None
    with contextlib.suppress(Exception):
        usage: Any = getattr(value, "memory_usage", None)
        if callable(usage):
            total: Any = usage(deep=True)
            size = int(total.sum()) if hasattr(total, "sum") else int(total)
        elif isinstance(getattr(value, "nbytes", None), int):
            size = value.nbytes
        else:
            size = sys.getsizeof(value)
    return "" if size is None else _human(size)


def _human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"


def describe(value: Any, *, name: str, state: KernelState | None = None) -> str:
    """A read-only description of a value, richer for DataFrames, Series and arrays.

    Only the known data types' own methods run (`variable_reach.is_data`); other objects
    are shown by their repr and the names of their plain attributes."""
    state = state if state is not None else KernelState(frozenset())
    klass = type(value)
    kind = f"{klass.__module__}.{klass.__qualname__}".removeprefix("builtins.")
    lines = [f"{name}: {kind}"]
    if is_frame_like(value):
        lines += _describe_frame(value)
    elif is_array_like(value):
        lines += _describe_array(value)
    else:
        shape = _shape(value)
        if shape:
            lines.append(shape)
        if isinstance(value, dict) and value:
            keys = list(cast(dict[Any, Any], value))
            shown = ", ".join(safe_repr(k, state, limit=200) for k in keys[:20])
            lines.append(f"keys: {shown}" + (" …" if len(keys) > 20 else ""))
        lines.append(f"repr: {safe_repr(value, state)}")
        if reads_as_routine(value):
            doc = first_doc_line(value)
            if doc:
                lines.append(f"doc: {doc}")
        elif not is_data(value):
            names = plain_attributes(value)
            if names:
                lines.append("attributes: " + ", ".join(names[:50]))
    return "\n".join(lines)


def _describe_frame(frame: Any) -> list[str]:
    lines = [f"shape: {_shape(frame)}", f"memory: {_memory(frame)}"]
    dtypes = frame.dtypes
    lines.append(
        "dtypes:\n" + (dtypes.to_string() if hasattr(dtypes, "to_string") else str(dtypes))
    )
    lines.append("head:\n" + _text(frame.head()))
    with contextlib.suppress(Exception):
        lines.append("describe:\n" + _text(frame.describe()))
    return lines


def _describe_array(array: Any) -> list[str]:
    lines = [f"shape: {_shape(array)}", f"dtype: {array.dtype}", f"memory: {_memory(array)}"]
    with contextlib.suppress(Exception):
        if array.size:
            lines.append(f"min: {array.min()!r}  max: {array.max()!r}")
    lines.append(f"repr: {_repr(array)}")
    return lines


def _text(value: Any) -> str:
    render: Any = getattr(value, "to_string", None)
    text = str(render()) if callable(render) else str(value)
    return text if len(text) <= _REPR_CHARS else text[:_REPR_CHARS] + "…"
