"""No class is cut in halves that share state: a base class sets what it reads.

A class that other classes derive from must assign (or define) every attribute it reads
on `self`, itself or through its own bases. A "mixin" that declares `model: Model` and
reads `self.model`, leaving the subclass in another module to set it, splits one class
over two files by line count rather than by meaning; the fix is composition (the loop
holds a `RequestBuilder` that is handed what it needs). Protocols, pydantic models and
exceptions describe shapes and are left out. The source is read with `ast`; nothing is
imported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "jupyter_toolhost"
SHAPES = {"Protocol", "BaseModel", "TypedDict", "NamedTuple", "Exception", "Generic"}


def _base_name(node: ast.expr) -> str:
    return ast.unparse(node).split("[")[0].rsplit(".", 1)[-1]


@dataclass
class ClassFacts:
    where: str
    bases: list[str]
    defined: set[str] = field(default_factory=set[str])
    """Methods, class attributes with a value, dataclass fields, and what methods assign."""
    read: set[str] = field(default_factory=set[str])
    declared_only: set[str] = field(default_factory=set[str])
    """Annotated at class level with no value, outside a dataclass."""


def class_facts(source: str, where: str) -> dict[str, ClassFacts]:
    found: dict[str, ClassFacts] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        facts = ClassFacts(where, [_base_name(b) for b in node.bases])
        is_dataclass = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                facts.defined.add(statement.name)
            elif isinstance(statement, ast.Assign):
                facts.defined |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                if statement.value is not None or is_dataclass:
                    facts.defined.add(statement.target.id)
                else:
                    facts.declared_only.add(statement.target.id)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and ast.unparse(sub.value) == "self":
                if isinstance(sub.ctx, ast.Store):
                    facts.defined.add(sub.attr)
                else:
                    facts.read.add(sub.attr)
        found[node.name] = facts
    return found


def unset_in_bases(classes: dict[str, ClassFacts]) -> list[str]:
    """Each base class that reads or declares an attribute neither it nor its bases set."""

    def defined(name: str, seen: frozenset[str] = frozenset()) -> set[str] | None:
        facts = classes.get(name)
        if facts is None or name in seen:
            return None  # a base outside the package: it may set anything
        names = set(facts.defined)
        for base in facts.bases:
            inherited = defined(base, seen | {name})
            if inherited is None and base not in ("object",):
                return None
            names |= inherited or set()
        return names

    used_as_base = {base for facts in classes.values() for base in facts.bases}
    problems = []
    for name in sorted(used_as_base & classes.keys()):
        facts = classes[name]
        if set(facts.bases) & SHAPES or name in SHAPES:
            continue
        known = defined(name)
        if known is None:
            continue
        missing = sorted((facts.read | facts.declared_only) - known)
        if missing:
            problems.append(f"{facts.where}: {name} reads or declares {missing} but never sets")
    return problems


def package_classes() -> dict[str, ClassFacts]:
    classes: dict[str, ClassFacts] = {}
    for path in sorted(ROOT.rglob("*.py")):
        classes.update(class_facts(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))))
    return classes


def test_a_mixin_that_declares_what_it_does_not_set_is_found() -> None:
    source = (
        "class Half:\n"
        "    model: str\n"
        "    def request(self):\n        return self.model, self.limit\n"
        "class Whole(Half):\n"
        "    def __init__(self):\n        self.model = 'm'\n        self.limit = 1\n"
        "class Owner:\n"
        "    def __init__(self):\n        self.model = 'm'\n"
        "    def use(self):\n        return self.model\n"
        "class Child(Owner):\n    pass\n"
    )
    assert unset_in_bases(class_facts(source, "x.py")) == [
        "x.py: Half reads or declares ['limit', 'model'] but never sets"
    ]


def test_no_base_class_in_the_package_leaves_its_state_to_a_subclass() -> None:
    classes = package_classes()
    assert len(classes) > 200, "the parser found no classes"
    assert unset_in_bases(classes) == []
