"""The whiteboard is a test: the package's parts, the arrows between them, and no cycle.

The parts and arrows live in one readable place, ``docs/architecture-layers.toml``;
``docs/architecture.md`` shows the same table (`test_the_architecture_page_shows_the_table`
keeps them equal; ``python tests/test_import_structure.py`` rewrites the page's block).

Every `import` statement counts, wherever it is: at module level, under `if TYPE_CHECKING:`,
or inside a function. A lazy import still says which module depends on which, and a cycle
among them is the tangle these tests exist to keep out. The source is read with `ast`;
nothing is imported.
"""

from __future__ import annotations

import ast
import functools
import shutil
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "jupyter_toolhost"
REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / PACKAGE
TABLE = REPO / "docs" / "architecture-layers.toml"
PAGE = REPO / "docs" / "architecture.md"
BEGIN = "<!-- parts and arrows: begin (from docs/architecture-layers.toml) -->"
END = "<!-- parts and arrows: end -->"


# ── the checker ──────────────────────────────────────────────────────────────────────────


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(
    path: Path, source: str | None = None, root: Path = ROOT
) -> Iterator[tuple[str, int]]:
    """Each (absolute module name, line) that the file at `path` imports, anywhere in it."""
    tree = ast.parse(source if source is not None else path.read_text(), filename=str(path))
    here = module_name(path, root)
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


def source_files(root: Path = ROOT, under: str = "") -> list[Path]:
    return sorted(p for p in (root / under).rglob("*.py") if "__pycache__" not in p.parts)


@functools.cache
def imports_of(path: Path, root: Path) -> tuple[tuple[str, int], ...]:
    """`imported_modules` of one file, parsed once per test session."""
    return tuple(imported_modules(path, root=root))


def import_graph(files: list[Path], known: set[str], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules among `known` it imports (the nearest known ancestor counts)."""
    graph: dict[str, set[str]] = {}
    for path in files:
        here = module_name(path, root)
        edges = graph.setdefault(here, set())
        for name, _line in imports_of(path, root):
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


@dataclass(frozen=True)
class Layers:
    """The table of `docs/architecture-layers.toml`."""

    parts: dict[str, str]
    arrows: dict[str, list[str]]
    forbidden: dict[str, list[str]]
    external: dict[str, list[str]]

    @classmethod
    def read(cls, path: Path = TABLE) -> Layers:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return cls(
            parts=data["parts"],
            arrows=data["arrows"],
            forbidden=data.get("forbidden", {}),
            external=data.get("external", {}),
        )


def part_of(module: str) -> str:
    """`jupyter_toolhost.agent.loop` -> ``agent``; the top-level modules -> ``root``."""
    rest = module.split(".")[1:]
    return rest[0] if len(rest) > 1 or (rest and rest[0] in _SUBPACKAGES) else "root"


_SUBPACKAGES = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}


def broken_arrows(root: Path, layers: Layers) -> list[str]:
    """Each import between parts that follows no arrow, or a forbidden one."""
    files = source_files(root)
    graph = import_graph(files, {module_name(p, root) for p in files}, root)
    found = []
    for module, targets in graph.items():
        for target in targets:
            here, there = part_of(module), part_of(target)
            if here == there:
                continue
            if there in layers.forbidden.get(here, ()):
                found.append(f"{module} -> {target} (forbidden: {here} -> {there})")
            elif there not in layers.arrows.get(here, ()):
                found.append(f"{module} -> {target} (no arrow {here} -> {there})")
    return sorted(found)


def package_cycle(root: Path) -> list[str] | None:
    files = source_files(root)
    return find_cycle(import_graph(files, {module_name(p, root) for p in files}, root))


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
        "def f():\n    from ..agent.loop import AgentLoop\n    import anthropic.types\n"
        "from . import cell\n"
    )
    names = {name for name, _ in imported_modules(ROOT / "jupyter" / "x.py", source)}
    assert f"{PACKAGE}.jupyter.host" in names
    assert f"{PACKAGE}.agent.loop" in names
    assert "anthropic.types" in names
    assert f"{PACKAGE}.jupyter.cell" in names


def test_a_back_edge_breaks_an_arrow_and_makes_a_cycle(tmp_path: Path) -> None:
    """A throwaway module in a copy of the package: the core importing the loop is caught,
    both as an arrow the table doesn't have and as the cycle it closes."""
    copy = tmp_path / PACKAGE
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "labextension"))
    (copy / "core" / "_backedge.py").write_text("from ..agent.loop import AgentLoop\n")
    conversation = copy / "core" / "conversation.py"
    conversation.write_text(
        conversation.read_text() + "\n\ndef _late():\n    from . import _backedge\n"
    )
    layers = Layers.read()
    assert broken_arrows(copy, layers) == [
        f"{PACKAGE}.core._backedge -> {PACKAGE}.agent.loop (forbidden: core -> agent)"
    ]
    cycle = package_cycle(copy)
    assert cycle is not None, "the back-edge closed no cycle"
    assert {f"{PACKAGE}.core._backedge", f"{PACKAGE}.core.conversation"} <= set(cycle)
    assert f"{PACKAGE}.agent.loop" in cycle


# ── the package's rules ──────────────────────────────────────────────────────────────────


def test_the_table_names_every_part_and_arrows_only_between_parts() -> None:
    layers = Layers.read()
    assert set(layers.parts) == _SUBPACKAGES | {"root"}, "a package the table doesn't name"
    assert set(layers.arrows) == set(layers.parts)
    for here, theres in [*layers.arrows.items(), *layers.forbidden.items()]:
        assert set(theres) <= set(layers.parts), here
        assert here not in theres, here
    for here, theres in layers.forbidden.items():
        assert not set(theres) & set(layers.arrows[here]), f"{here}: allowed and forbidden"
    assert "exceptions" not in tomllib.loads(TABLE.read_text(encoding="utf-8")), (
        "an import that breaks an arrow is fixed, not listed"
    )


def test_no_import_cycle_across_the_package() -> None:
    files = source_files()
    graph = import_graph(files, {module_name(p) for p in files})
    assert sum(map(len, graph.values())) > 500, "the graph is empty: the parser lost the imports"
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_every_import_between_parts_follows_an_arrow() -> None:
    assert broken_arrows(ROOT, Layers.read()) == []


def test_every_arrow_is_taken_by_some_import() -> None:
    """The table is what the code needs: an arrow no import takes is a door left open."""
    layers = Layers.read()
    files = source_files()
    graph = import_graph(files, {module_name(p) for p in files})
    taken = {(part_of(m), part_of(t)) for m, targets in graph.items() for t in targets}
    unused = [f"{h} -> {t}" for h, theres in layers.arrows.items() for t in theres
              if (h, t) not in taken]  # fmt: skip
    assert unused == [], f"arrows no import takes (remove them from the table): {unused}"


def test_third_party_packages_are_imported_only_where_the_table_allows() -> None:
    layers = Layers.read()
    found = []
    for path in source_files():
        here = part_of(module_name(path))
        for name, line in imports_of(path, ROOT):
            top = name.split(".")[0]
            if top in layers.external and here not in layers.external[top]:
                found.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    assert sorted(set(found)) == []


def test_host_state_is_not_imported_back_by_the_host() -> None:
    """`host` owns the state; commands, the magic and `mcp_command` build on it."""
    files = source_files(under="jupyter")
    graph = import_graph(files, {module_name(p) for p in files})
    host = f"{PACKAGE}.jupyter.host"
    for dependant in ("magic.commands", "magic.mcp_command", "magic.magics", "cell"):
        assert f"{PACKAGE}.jupyter.{dependant}" not in graph[host], dependant
    assert host not in graph[f"{PACKAGE}.jupyter.agent"], "agent reads the host through a Protocol"
    for user in ("magic.commands", "magic.mcp_command"):
        assert host in graph[f"{PACKAGE}.jupyter.{user}"], user


# ── the page that draws it ───────────────────────────────────────────────────────────────


def rendered_table(layers: Layers) -> str:
    """The Markdown block of `docs/architecture.md`: one row per part, top-down."""
    lines = [
        BEGIN,
        "",
        "| part | owns | may import |",
        "| --- | --- | --- |",
    ]
    for part in reversed(list(layers.parts)):
        arrows = ", ".join(f"`{a}`" for a in layers.arrows[part]) or "nothing of the package"
        lines.append(f"| `{part}` | {layers.parts[part]} | {arrows} |")
    lines.append("")
    for name, parts in layers.external.items():
        lines.append(f"- only {', '.join(f'`{p}`' for p in parts)} may import `{name}`")
    lines += ["", END]
    return "\n".join(lines)


def page_block(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def test_the_architecture_page_shows_the_table() -> None:
    assert page_block(PAGE.read_text(encoding="utf-8")) == rendered_table(Layers.read()), (
        "docs/architecture.md is out of date: run `python tests/test_import_structure.py`"
    )


if __name__ == "__main__":
    text = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(text.replace(page_block(text), rendered_table(Layers.read())), "utf-8")
    sys.exit(0)
