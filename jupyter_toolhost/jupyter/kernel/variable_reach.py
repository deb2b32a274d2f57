"""What ListVariables and InspectVariable may read in the kernel: the user's own plain data,
never the kernel's objects, and never by running code.

Both tools are read-only, so they run unasked in every permission mode, plan and
bypassPermissions included. What they reach is therefore an allow-list, not a block-list:

- A path starts at a **user variable**: a name of the namespace that is not IPython's own
  (`user_ns_hidden`: ``In``, ``Out``, ``get_ipython``, ``exit``, ...), does not start with
  ``_`` (``_``, ``_oh``, ``_i``, ``__builtins__``) and holds no kernel object (below).
- Each step is ``.name`` or ``[key]``; no calls, no expressions.
  - ``.name`` never starts with ``_``: no dunders (``__globals__``, ``__self__``,
    ``__dict__``, ``__class__``, ``__closure__``) and no private state.
  - An attribute is read statically (`inspect.getattr_static`): instance data, slots and
    class constants. A property, a ``__getattr__`` or any other Python descriptor would run
    code, so it is refused. Values of known data types (the builtins' containers and
    scalars, pandas, numpy, polars, pyarrow, xarray) are read with their own public
    attributes, which are data (``df.columns``, ``arr.shape``).
  - ``[key]`` (a constant, or a slice of constants) only indexes dict, list, tuple, str
    and bytes, read as plain data (a subclass's ``__getitem__`` or ``__missing__`` never
    runs), and the known data types (``df['col']``, ``arr[0]``).
  - Functions and methods are described, never walked through.
- No step may pass through or end at a **kernel object**: a module, a frame, a code
  object, a traceback, a generator or coroutine (they hold frames), ``os.environ``,
  ``sys.modules``, the shell's namespaces and its ``In``/``Out`` history, or an object, a
  class or a method of the kernel's and the tool host's packages (`KERNEL_PACKAGES`).

Describing a value calls its ``__repr__`` (as Jupyter does whenever it shows a value) and,
for the known data types, their own methods (``head()``, ``describe()``); nothing else.
Containers are shown by this module, so a kernel object inside one stays hidden.

A refused path is refused, not asked: the tools declare themselves read-only, so an input
that asks would make that flag untrue, and PythonExec is the tool that asks. Each refusal
says why and names PythonExec.
"""

from __future__ import annotations

import ast
import collections
import datetime
import decimal
import fractions
import inspect
import os
import pathlib
import sys
import types
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from ...core.types import ToolError

KERNEL_PACKAGES = frozenset(
    {
        "IPython",
        "ipykernel",
        "jupyter_client",
        "jupyter_core",
        "jupyter_server",
        "zmq",
        "tornado",
        "traitlets",
        "comm",
        "ipywidgets",
        "jupyter_toolhost",
        "anthropic",
        "httpx",
        "httpx2",
    }
)
"""Packages whose objects are the kernel's or the tool host's own state (the kernel, its
session and signing key, its comm manager, the shell, the agent's sessions and clients)."""

DATA_PACKAGES = frozenset({"pandas", "numpy", "polars", "pyarrow", "xarray"})
"""Packages whose values are data: their public attributes and indexing read that data."""

_PLAIN_TYPES: frozenset[type] = frozenset(
    {
        int,
        float,
        complex,
        bool,
        str,
        bytes,
        bytearray,
        list,
        tuple,
        dict,
        set,
        frozenset,
        type(None),
        range,
        slice,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        decimal.Decimal,
        fractions.Fraction,
        uuid.UUID,
        collections.OrderedDict,
        collections.defaultdict,
        collections.Counter,
        collections.deque,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    }
)
"""Types whose values are plain data (a subclass is not: its code is someone's)."""

_SLOT_READERS = (
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    type(cast(Any, collections.namedtuple("_Pair", "a b")).a),  # a namedtuple's field
)
"""Descriptors that read a C-level slot or a tuple field: data, not code."""

_HOLDS_FRAMES = (
    types.FrameType,
    types.CodeType,
    types.TracebackType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    types.CellType,
)

MAX_PATH_CHARS = 500
MAX_STEPS = 32
REPR_CHARS = 2_000
_ITEMS = 20
_DEPTH = 3

USE_PYTHON_EXEC = (
    "InspectVariable reads only your variables' plain data, without running code. To look "
    "at this anyway, use PythonExec, which asks the user first."
)

Step = tuple[Literal["attr", "item"], Any]


# ── what counts as what ───────────────────────────────────────────────────────────────


def _module_of(klass: type) -> str:
    try:
        module = type.__getattribute__(klass, "__module__")
    except AttributeError:
        return ""
    return module if isinstance(module, str) else ""


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def _mro(klass: type) -> tuple[type, ...]:
    return cast(tuple[type, ...], type.__dict__["__mro__"].__get__(klass))


def is_data(value: Any) -> bool:
    """A plain value, or one of a data package whose classes are all its own (or builtins)."""
    klass = type(value)
    if klass in _PLAIN_TYPES:
        return True
    modules = {_top(_module_of(k)) for k in _mro(klass)}
    return bool(modules & DATA_PACKAGES) and modules <= DATA_PACKAGES | {"builtins"}


def _static(value: Any, name: str) -> Any:
    """An attribute read without running Python code (slots and members resolved)."""
    found = inspect.getattr_static(value, name)
    if isinstance(found, _SLOT_READERS):
        return found.__get__(value, type(value))
    return found


def _routine_module(value: Any) -> str:
    with_module = value
    if isinstance(value, types.MethodType | types.BuiltinMethodType):
        with_module = _static(value, "__self__")
        if with_module is not None and not isinstance(with_module, types.ModuleType):
            return _module_of(type(with_module))
    try:
        module = _static(with_module, "__module__")
    except AttributeError:
        return ""
    return module if isinstance(module, str) else ""


@dataclass(frozen=True, slots=True)
class KernelState:
    """The shell's own objects, known by identity: its namespaces and its history."""

    objects: frozenset[int]

    @classmethod
    def of(cls, shell: Any) -> KernelState:
        known: list[Any] = [sys.modules, os.environ, os.environb, shell]
        for name in ("user_ns", "user_global_ns", "user_ns_hidden"):
            known.append(getattr(shell, name, None))
        hidden: Mapping[str, Any] = getattr(shell, "user_ns_hidden", {}) or {}
        known += [v for v in hidden.values() if not isinstance(v, str | int | float | bool)]
        return cls(frozenset(id(v) for v in known if v is not None))


def refusal(value: Any, state: KernelState) -> str | None:
    """Why `value` is the kernel's own (a reason to name), or None when it is not."""
    klass = type(value)
    if value is os.environ or value is os.environb or issubclass(klass, type(os.environ)):
        return "the kernel's environment variables (os.environ)"
    if value is sys.modules:
        return "the interpreter's table of modules (sys.modules)"
    if issubclass(klass, types.ModuleType):
        return f"a module ({getattr(value, '__name__', '?')})"
    if issubclass(klass, _HOLDS_FRAMES):
        return f"a {klass.__name__} (it holds the running code's frames and variables)"
    classes = [*_mro(klass), *(_mro(value) if isinstance(value, type) else ())]
    for k in classes:
        package = _top(_module_of(k))
        if package in KERNEL_PACKAGES:
            return f"an object of {package} (the kernel's or the tool host's own state)"
    if inspect.isroutine(value):
        package = _top(_routine_module(value))
        if package in KERNEL_PACKAGES:
            return f"a function of {package} (the kernel's or the tool host's own code)"
    if id(value) in state.objects and not isinstance(value, str | int | float | bool):
        return "IPython's own state (its namespace or its In/Out history)"
    return None


# ── the user's variables ──────────────────────────────────────────────────────────────


def user_variables(shell: Any, *, callables: bool = False) -> dict[str, Any]:
    """The user's own names: not IPython's, not `_` names, no modules, no kernel objects."""
    hidden = getattr(shell, "user_ns_hidden", {})
    state = KernelState.of(shell)
    found: dict[str, Any] = {}
    for name, value in shell.user_ns.items():
        if name.startswith("_") or (name in hidden and hidden[name] is value):
            continue
        if refusal(value, state) is not None:
            continue
        if not callables and (inspect.isroutine(value) or isinstance(value, type)):
            continue
        found[name] = value
    return found


# ── paths ─────────────────────────────────────────────────────────────────────────────


def parse_path(text: str) -> tuple[str, list[Step]]:
    """`name`, then `.attr` and `[constant]` steps; anything else is refused."""
    source = text.strip()
    if len(source) > MAX_PATH_CHARS:
        raise ToolError(f"The path is over {MAX_PATH_CHARS} characters.")
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        node = None
    steps: list[Step] = []
    while node is not None and not isinstance(node, ast.Name):
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr))
            node = node.value
        elif isinstance(node, ast.Subscript):
            steps.append(("item", _key(node.slice, source)))
            node = node.value
        else:
            node = None
    if node is None:
        raise ToolError(
            f"{source!r} is not a variable path: use a name, then .attribute and [key] steps "
            "with constant keys (no calls or expressions), e.g. 'df', \"df['price']\", "
            "'model.coef_', \"config['db']['host']\"."
        )
    if len(steps) > MAX_STEPS:
        raise ToolError(f"The path has over {MAX_STEPS} steps.")
    return node.id, steps[::-1]


def _key(node: ast.expr, source: str) -> Any:
    try:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            bounds = [None if p is None else ast.literal_eval(p) for p in parts]
            if all(b is None or type(b) is int for b in bounds):
                return slice(*bounds)
            raise ValueError
        key = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ToolError(
            f"In {source!r}, a [key] must be a constant (a string, a number, or a slice of "
            "numbers)."
        ) from None
    if not _constant(key):
        raise ToolError(f"In {source!r}, a [key] must be a string, a number or a tuple of them.")
    return key


def _constant(key: Any) -> bool:
    if type(key) is tuple:
        return all(_constant(k) for k in cast(tuple[Any, ...], key))
    return type(key) in (str, int, float, bool, bytes, type(None), slice)


def _shown(head: str, steps: list[Step]) -> str:
    return head + "".join(f".{k}" if kind == "attr" else f"[{k!r}]" for kind, k in steps)


def lookup(shell: Any, path: str) -> Any:
    """The value at `path`, reached under the rules of the module docstring."""
    head, steps = parse_path(path)
    state = KernelState.of(shell)
    namespace: Mapping[str, Any] = shell.user_ns
    if head not in namespace:
        mine = user_variables(shell, callables=True)
        close = [n for n in mine if n.lower() == head.lower()]
        hint = f" Did you mean {close[0]!r}?" if close else " Use ListVariables to see the names."
        raise ToolError(f"No variable named {head!r} in the kernel.{hint}")
    value = namespace[head]
    hidden: Mapping[str, Any] = getattr(shell, "user_ns_hidden", {}) or {}
    if head.startswith("_") or (head in hidden and hidden[head] is value):
        raise ToolError(
            f"{head!r} is IPython's own name, not one of your variables. {USE_PYTHON_EXEC}"
        )
    _check(value, head, state)
    for index, step in enumerate(steps):
        where = _shown(head, steps[: index + 1])
        value = (
            _attribute(value, step[1], where) if step[0] == "attr" else _item(value, step[1], where)
        )
        _check(value, where, state)
    return value


def _check(value: Any, where: str, state: KernelState) -> None:
    reason = refusal(value, state)
    if reason is not None:
        raise ToolError(f"{where} is {reason}. {USE_PYTHON_EXEC}")


def _attribute(value: Any, name: str, where: str) -> Any:
    if name.startswith("_"):
        raise ToolError(
            f"{where}: names that start with '_' (private and dunder attributes) are not "
            f"followed. {USE_PYTHON_EXEC}"
        )
    kind = _type_name(type(value))
    if inspect.isroutine(value):
        raise ToolError(
            f"{where}: {kind} is a function; its attributes are not followed. {USE_PYTHON_EXEC}"
        )
    if is_data(value) and not isinstance(value, type):
        try:
            return getattr(value, name)
        except AttributeError:
            raise ToolError(f"{kind} object has no attribute {name!r}") from None
    try:
        found = inspect.getattr_static(value, name)
    except AttributeError:
        if _computes_attributes(type(value)):
            raise ToolError(
                f"{where}: {kind} has no plain attribute {name!r}; its __getattr__ or "
                f"__getattribute__ would compute one, which runs code. {USE_PYTHON_EXEC}"
            ) from None
        raise ToolError(f"{kind} object has no attribute {name!r}") from None
    if isinstance(found, _SLOT_READERS):
        return found.__get__(value, type(value))
    if isinstance(found, staticmethod | classmethod):
        return cast(Any, found).__func__
    if inspect.isroutine(found) or not hasattr(type(found), "__get__"):
        return found  # instance data, a class constant, or a function (described, not run)
    what = "a property" if isinstance(found, property) else f"a {_type_name(type(found))}"
    raise ToolError(
        f"{where} is {what} of {kind}: reading it runs code, which InspectVariable never "
        f"does. {USE_PYTHON_EXEC}"
    )


def _computes_attributes(klass: type) -> bool:
    """Whether the class makes attributes up on access (a proxy, a lazy object)."""
    plain = object.__dict__["__getattribute__"]
    own = inspect.getattr_static(klass, "__getattribute__", plain)
    return inspect.getattr_static(klass, "__getattr__", None) is not None or own is not plain


_MISSING = object()


def _item(value: Any, key: Any, where: str) -> Any:
    klass = type(value)
    try:
        if is_data(value) and klass not in _PLAIN_TYPES:
            return value[key]
        if issubclass(klass, dict):
            if isinstance(key, slice):
                raise TypeError("a dict takes a key, not a slice")
            found = dict.get(cast(dict[Any, Any], value), key, _MISSING)
            if found is _MISSING:
                keys = ", ".join(repr(k) for k in list(cast(dict[Any, Any], value))[:_ITEMS])
                raise ToolError(f"{where}: no such key. Keys: {keys}")
            return found
        for plain in (list, tuple, str, bytes, bytearray, collections.deque):
            if issubclass(klass, plain):
                return cast(Any, plain).__getitem__(value, key)
    except ToolError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ToolError(f"{where}: {type(exc).__name__}: {exc}") from None
    raise ToolError(
        f"{where}: indexing a {_type_name(klass)} runs its own __getitem__ (only dict, "
        f"list, tuple, str and data frames or arrays are indexed). {USE_PYTHON_EXEC}"
    )


def _type_name(klass: type) -> str:
    module = _module_of(klass)
    name = type.__getattribute__(klass, "__qualname__")
    return name if module in ("builtins", "") else f"{module}.{name}"


# ── showing a value ───────────────────────────────────────────────────────────────────


def safe_repr(value: Any, state: KernelState, *, limit: int = REPR_CHARS) -> str:
    """A repr that shows containers itself, so a kernel object inside one stays hidden."""
    text = _repr(value, state, _DEPTH)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} chars)"


def _repr(value: Any, state: KernelState, depth: int) -> str:
    reason = refusal(value, state)
    if reason is not None:
        return f"<hidden: {reason}>"
    klass = type(value)
    if klass in (dict, collections.OrderedDict, collections.defaultdict, collections.Counter):
        if depth <= 0:
            return "{…}"
        items = list(cast(dict[Any, Any], value).items())
        body = ", ".join(
            f"{_repr(k, state, depth - 1)}: {_repr(v, state, depth - 1)}" for k, v in items[:_ITEMS]
        )
        more = ", …" if len(items) > _ITEMS else ""
        return "{" + body + more + "}"
    brackets = {list: "[]", tuple: "()", set: "{}", frozenset: "{}", collections.deque: "[]"}
    if klass in brackets:
        if depth <= 0:
            return brackets[klass][0] + "…" + brackets[klass][1]
        members = list(cast(Iterable[Any], value))
        body = ", ".join(_repr(v, state, depth - 1) for v in members[:_ITEMS])
        body += (
            ", …"
            if len(members) > _ITEMS
            else ("," if klass is tuple and len(members) == 1 else "")
        )
        return brackets[klass][0] + body + brackets[klass][1]
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= REPR_CHARS else text[:REPR_CHARS] + "…"


def plain_attributes(value: Any) -> list[str]:
    """The public names of an object's own data (instance dict and slots), read statically."""
    names: list[str] = []
    try:
        own = _static(value, "__dict__")
    except AttributeError:
        own = None
    if isinstance(own, dict):
        names += [n for n in cast(dict[Any, Any], own) if isinstance(n, str)]
    for klass in _mro(type(value)):
        slots = vars(klass).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if isinstance(s, str)]
    return sorted({n for n in names if not n.startswith("_")})


def reads_as_routine(value: Any) -> bool:
    """A function, a method or a class: described by its signature and doc."""
    return inspect.isroutine(value) or isinstance(value, type)


def first_doc_line(value: Any) -> str | None:
    """The first line of a routine's or a class's own docstring, read statically."""
    try:
        doc = _static(value, "__doc__")
    except AttributeError:
        return None
    if not isinstance(doc, str) or not doc.strip():
        return None
    return inspect.cleandoc(doc).splitlines()[0]


def is_frame_like(value: Any) -> bool:
    return (
        is_data(value)
        and all(callable(getattr(value, name, None)) for name in ("head", "describe"))
        and hasattr(value, "dtypes")
    )


def is_array_like(value: Any) -> bool:
    return (
        is_data(value)
        and isinstance(getattr(value, "shape", None), tuple)
        and hasattr(value, "dtype")
    )
