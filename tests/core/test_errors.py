"""One exception tree: every exception class of the package derives from `ToolhostError`
and is named, under its parent, in the tree `core/errors.py` documents.

The classes are found by importing every module of the package (the lab extension's build
output aside) and collecting the exception classes each one defines, so a new class that
forgets its base or its line in the tree fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import textwrap

import jupyter_toolhost
from jupyter_toolhost.core import errors
from jupyter_toolhost.core.errors import ToolhostError

OUTSIDE = {"jupyter_toolhost.jupyter.host.AgentInterrupted"}
"""A KeyboardInterrupt on purpose (the docstring says why)."""


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(jupyter_toolhost.__path__, "jupyter_toolhost."):
        if info.name.startswith("jupyter_toolhost.labextension"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _documented_tree() -> dict[str, tuple[str | None, str]]:
    """Class name -> (parent's name, where the docstring says it is defined)."""
    doc = errors.__doc__ or ""
    block = doc.split("::\n", 1)[1].split("\n\nOne class stands outside", 1)[0]
    tree: dict[str, tuple[str | None, str]] = {}
    stack: list[tuple[int, str]] = []
    for line in textwrap.dedent(block).splitlines():
        # The root starts the line; every other class follows "├── " or "└── ".
        match = re.match(r"^((?:[│ ]   )*)([├└]── )?([A-Z]\w*)\s+([\w.]+)", line)
        if match is None or (match.group(1) and not match.group(2)):
            continue
        depth = len(match.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        tree[match.group(3)] = (stack[-1][1] if stack else None, match.group(4).rstrip(":"))
        stack.append((depth, match.group(3)))
    return tree


def test_every_exception_class_derives_from_the_root() -> None:
    found = _defined_exceptions()
    assert len(found) >= 30  # the walk reached every layer
    strays = [name for name, cls in found.items() if not issubclass(cls, ToolhostError)]
    assert sorted(strays) == sorted(OUTSIDE)


def test_every_public_exception_class_is_in_the_documented_tree_under_its_parent() -> None:
    tree = _documented_tree()
    assert tree["ToolhostError"] == (None, "core.errors")
    for name, cls in _defined_exceptions().items():
        if name in OUTSIDE:
            assert cls.__name__ in (errors.__doc__ or "")
            continue
        if cls.__name__.startswith("_"):
            assert cls.__name__ in (errors.__doc__ or ""), name  # named among the internal ones
            continue
        assert cls.__name__ in tree, f"{name} is not in core/errors.py's tree"
        parent, where = tree[cls.__name__]
        assert name == f"jupyter_toolhost.{where}.{cls.__name__}", (name, where)
        if parent is not None:
            assert cls.__mro__[1].__name__ == parent, (name, cls.__mro__[1].__name__, parent)


def test_the_tree_names_no_class_that_does_not_exist() -> None:
    defined = {cls.__name__ for cls in _defined_exceptions().values()}
    assert set(_documented_tree()) <= defined


def test_classes_keep_the_builtin_bases_they_had() -> None:
    """`except ValueError` around the parsers and `except RuntimeError` around a cell keep
    catching what they caught before the tree."""
    found = {cls.__name__: cls for cls in _defined_exceptions().values()}
    for name in (
        "RuleError",
        "McpConfigError",
        "ThinkingConfigError",
        "FrontMatterError",
        "UsageError",
        "CheckError",
        "ShellSyntaxError",
        "Unchecked",
        "TooManyWords",
        "ScheduleError",
        "UnmappableSchema",
    ):
        assert issubclass(found[name], ValueError), name
    assert issubclass(found["AgentFailed"], RuntimeError)
    assert not issubclass(found["AgentInterrupted"], Exception)


def test_the_public_errors_are_exported_from_the_package() -> None:
    for name in jupyter_toolhost.__all__:
        value = getattr(jupyter_toolhost, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert issubclass(value, ToolhostError), name
    for name in ("ToolhostError", "ConfigurationError", "UsageError", "ToolError", "ModelError"):
        assert name in jupyter_toolhost.__all__
        assert issubclass(getattr(jupyter_toolhost, name), ToolhostError)
