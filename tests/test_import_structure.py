"""The package's layer rules, read from its source with `ast` (nothing is imported).

Every `import` statement counts, wherever it is: at module level, under `if TYPE_CHECKING:`,
or inside a function. A lazy import still says which module depends on which, and a cycle
among them is the tangle these tests exist to keep out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "jupyter_toolhost"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
BELOW_TOOLS = tuple(f"{PACKAGE}.{m}" for m in ("loop", "orchestration", "transcript"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, source: str | None = None) -> Iterator[tuple[str, int]]:
    """Each (absolute module name, line) that the file at `path` imports, anywhere in it."""
    tree = ast.parse(source if source is not None else path.read_text(), filename=str(path))
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix, node.lineno
            for alias in node.names:  # `from . import cell` imports the module `cell`
                yield f"{prefix}.{alias.name}", node.lineno


def source_files(under: str = "") -> list[Path]:
    return sorted((ROOT / under).rglob("*.py"))


def import_graph(files: list[Path], known: set[str]) -> dict[str, set[str]]:
    """Module -> the modules among `known` it imports (the nearest known ancestor counts)."""
    graph: dict[str, set[str]] = {}
    for path in files:
        here = module_name(path)
        edges = graph.setdefault(here, set())
        for name, _line in imported_modules(path):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != here:
                edges.add(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in `graph` (as a path that starts and ends on the same module), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def violations(files: list[Path], banned: tuple[str, ...]) -> list[str]:
    found = []
    for path in files:
        for name, line in imported_modules(path):
            if any(name == b or name.startswith(b + ".") for b in banned):
                found.append(f"{path.relative_to(ROOT.parent)}:{line} imports {name}")
    return sorted(set(found))


# ── the checker itself, on sources written here ──────────────────────────────────────────


def test_the_cycle_finder_sees_a_cycle_through_lazy_and_type_checking_imports() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"p.a", "p.b", "p.c"}
    assert find_cycle({"p.a": {"p.b"}, "p.b": set(), "p.d": {"p.a", "p.b"}}) is None


def test_relative_imports_resolve_in_functions_and_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .host import AgentHost\n"
        "def f():\n    from ..loop import AgentLoop\n    import anthropic.types\n"
        "from . import cell\n"
    )
    names = {name for name, _ in imported_modules(ROOT / "jupyter" / "x.py", source)}
    assert f"{PACKAGE}.jupyter.host" in names
    assert f"{PACKAGE}.loop" in names
    assert "anthropic.types" in names
    assert f"{PACKAGE}.jupyter.cell" in names


# ── the package's rules ──────────────────────────────────────────────────────────────────


def test_no_import_cycle_among_the_jupyter_modules() -> None:
    files = source_files("jupyter")
    assert len(files) > 5
    known = {module_name(p) for p in files}
    graph = import_graph(files, known)
    assert graph[f"{PACKAGE}.jupyter.commands"], "the graph is empty: the parser lost the imports"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_host_state_is_not_imported_back_by_the_host() -> None:
    """`host` owns the state; commands, the magic and `mcp_command` build on it."""
    files = source_files("jupyter")
    graph = import_graph(files, {module_name(p) for p in files})
    host = f"{PACKAGE}.jupyter.host"
    for dependant in ("commands", "mcp_command", "magics", "cell"):
        assert f"{PACKAGE}.jupyter.{dependant}" not in graph[host], dependant
    assert host not in graph[f"{PACKAGE}.jupyter.agent"], "agent reads the host through a Protocol"
    for user in ("commands", "mcp_command"):
        assert host in graph[f"{PACKAGE}.jupyter.{user}"], user


def test_tools_do_not_import_the_loop_the_orchestrator_or_the_transcript() -> None:
    assert violations(source_files("tools"), BELOW_TOOLS) == []


def test_nothing_below_jupyter_imports_ipython_or_ipywidgets() -> None:
    below = [p for p in source_files() if "jupyter" not in p.relative_to(ROOT).parts[:1]]
    assert len(below) > 20
    assert violations(below, ("IPython", "ipywidgets", "ipykernel")) == []


def test_only_model_imports_anthropic() -> None:
    others = [p for p in source_files() if p.relative_to(ROOT).parts[0] != "model"]
    assert violations(others, ("anthropic",)) == []
