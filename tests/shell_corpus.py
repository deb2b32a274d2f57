"""Shell that no one here wrote, cut into commands and mutated, for the permission engine.

Not a test module: `test_shell_corpus.py` and `test_shell_generator.py` import it.

- `load_corpus()` reads, at test time, the shell scripts two Debian packages install
  (`bash-completion`'s completions and `git`'s shell scripts, found through ``dpkg -L``) and
  cuts them into statements with tree-sitter-bash, the grammar the engine reads: every
  statement at every depth (inside functions, loops, conditionals and substitutions too).
  Nothing of them is copied into the repository. A missing package raises `CorpusMissing`
  (a skip, or a failure under ``CI=true``).
- `mutants(text)` puts a denied action where the original runs something: a command node is
  replaced by the action, a parameter expansion by ``$(action)``. Each mutant names the
  context it lands in (subscript, arithmetic, here-document, function body, loop...).
- `Project` is a throwaway project with a victim file, a Read-denied ``secrets/key.txt`` and
  an Edit-denied ``protected/f.txt``; `Project.decide` is the engine's decision in every mode
  (`Session.check`, the Bash sandbox off), timed.
- The oracle that does not trust the engine, `real_run`, is in `shell_oracle.py`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

    from jupyter_toolhost import Session

T = TypeVar("T")
SOURCE_PACKAGES = ("bash-completion", "git")
"""Debian packages whose installed shell scripts make the corpus (./dev test installs them)."""
MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
DENY = ["Read(./secrets/**)", "Edit(./protected/**)", "Bash(rm:*)"]
SECRET = "SECRET-c0rpus-5e1f-77aa"
PROTECTED = "protected content\n"
VICTIM = "victim content\n"
PAYLOADS = {
    "delete": "rm -f victim",
    "read": "cat secrets/key.txt",
    "write": "echo pwned > protected/f.txt",
}
"""A denied action of each kind: a `Bash(rm:*)` deny, a Read deny, an Edit deny."""
COMPLETIONS = "/usr/share/bash-completion/"
MAX_UNIT_CHARS = 4_000
"""Longer statements (a few whole completion functions) are left out; their parts are in."""

_CONTAINERS = frozenset(
    {"program", "compound_statement", "do_group", "if_statement", "elif_clause", "else_clause"}
) | frozenset({"case_item", "subshell", "command_substitution", "process_substitution", "list"})
_STATEMENTS = (
    frozenset(
        {"command", "redirected_statement", "pipeline", "list", "subshell", "compound_statement"}
    )
    | frozenset({"if_statement", "while_statement", "for_statement", "c_style_for_statement"})
    | frozenset(
        {"case_statement", "function_definition", "declaration_command", "variable_assignment"}
    )
    | frozenset({"variable_assignments", "unset_command", "test_command", "negated_command"})
)
_DECLARING = frozenset({"declaration_command"})
CONTEXTS = {
    "subscript": "subscript",
    "arithmetic_expansion": "arithmetic",
    "command_substitution": "command substitution",
    "process_substitution": "process substitution",
    "heredoc_body": "here-document",
    "expansion": "parameter expansion",
    "test_command": "test [[ ]]",
    "function_definition": "function body",
    "if_statement": "conditional",
    "case_statement": "conditional",
    "list": "conditional",
    "for_statement": "loop",
    "c_style_for_statement": "loop",
    "while_statement": "loop",
    "declaration_command": "declaration",
    "variable_assignment": "assignment",
    "string": "double quotes",
    "pipeline": "pipeline",
    "subshell": "subshell",
    "redirected_statement": "redirection",
    "array": "array",
}
"""Syntax-tree node types, and the context a mutant inside one is said to land in."""


class CorpusMissing(Exception):
    """A source package is not installed (CI installs them: ./dev test)."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One statement of an installed script."""

    source: str
    """The Debian package the script comes from."""
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Mutant:
    """A unit with a denied action put where it ran something."""

    origin: Unit
    text: str
    kind: str
    """``delete``, ``read`` or ``write`` (the key of `PAYLOADS`)."""
    context: str
    """The innermost context of the action (a value of `CONTEXTS`, or ``top level``)."""
    site: str
    """``command``, ``expansion``, ``redirect`` or ``operand`` (see `mutants`)."""

    @property
    def strict(self) -> bool:
        """Whether an allow is unsafe as soon as bash accepts the mutant: its action runs
        wherever the original ran something. An operand that became the secret's path may
        only be named (``echo secrets/key.txt``): there the real run decides."""
        return self.site != "operand"


# ── the corpus ──────────────────────────────────────────────────────────────────────────


@lru_cache(maxsize=1)
def parser() -> Parser:
    """tree-sitter-bash, as the engine loads it."""
    from tree_sitter import Language, Parser
    from tree_sitter_bash import language

    return Parser(Language(language()))


def package_scripts(package: str) -> list[Path]:
    """The shell scripts `package` installed (``dpkg -L``): bash completions, files with a
    sh/bash first line, and ``*.sh``. Raises `CorpusMissing` when there are none."""
    try:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise CorpusMissing(f"dpkg cannot list {package}: {exc}") from exc
    if listed.returncode != 0:
        raise CorpusMissing(f"the Debian package {package} is not installed")
    found = []
    for line in sorted(set(listed.stdout.splitlines())):
        path = Path(line)
        if path.is_symlink() or not path.is_file():
            continue
        if line.startswith(COMPLETIONS) or line.endswith(".sh") or _shell_shebang(path):
            found.append(path)
    if not found:
        raise CorpusMissing(f"{package} installed no shell scripts here")
    return found


def _shell_shebang(path: Path) -> bool:
    with path.open("rb") as handle:
        first = handle.readline(200)
    if not first.startswith(b"#!"):
        return False
    words = first[2:].split()
    names = [w.rsplit(b"/", 1)[-1] for w in words[:2]]
    return any(n in (b"sh", b"bash", b"dash") for n in names)


def statements(data: bytes) -> Iterator[bytes]:
    """Every statement of a script's syntax tree, nested ones too, as source bytes."""
    tree = parser().parse(data)
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        children = node.children
        if node.type in _CONTAINERS:
            for index, child in enumerate(children):
                if child.type in _STATEMENTS and node.field_name_for_child(index) != "value":
                    yield _with_heredocs(data, child)
        stack.extend(reversed(children))


def _with_heredocs(data: bytes, node: Node) -> bytes:
    """The node's text; a here-document's body follows its line, so take whole lines then."""
    end = node.end_byte
    for child in _descendants(node):
        if child.type == "heredoc_body":
            line_end = data.find(b"\n", child.end_byte)
            end = max(end, len(data) if line_end < 0 else line_end)
    return data[node.start_byte : end]


def _descendants(node: Node) -> Iterator[Node]:
    stack = list(node.children)
    while stack:
        child = stack.pop()
        yield child
        stack.extend(child.children)


@lru_cache(maxsize=1)
def load_corpus() -> tuple[Unit, ...]:
    """Every distinct statement (≤ `MAX_UNIT_CHARS`) of every source package, in a stable
    order. Raises `CorpusMissing` when a package is missing."""
    seen: set[str] = set()
    units = []
    for package in SOURCE_PACKAGES:
        for path in package_scripts(package):
            data = path.read_bytes()
            if b"\0" in data:
                continue
            for raw in statements(data):
                text = raw.decode("utf-8", "replace").strip()
                if not text or len(text) > MAX_UNIT_CHARS or text in seen:
                    continue
                seen.add(text)
                units.append(Unit(package, str(path), text))
    return tuple(units)


# ── mutations ───────────────────────────────────────────────────────────────────────────


def _context(node: Node, stop: Node) -> str:
    """The innermost named context between `node` and the unit's root `stop`."""
    parent = node.parent
    while parent is not None and parent != stop:
        if parent.type in CONTEXTS:
            grand = parent.parent
            if parent.type == "variable_assignment" and grand and grand.type in _DECLARING:
                return "declaration"  # `local x=$(...)`: the builtin assigns
            return CONTEXTS[parent.type]
        parent = parent.parent
    return "top level"


def _quoted_heredoc(node: Node) -> bool:
    """Whether `node` sits in the body of a here-document whose delimiter is quoted (bash
    expands nothing there)."""
    parent = node.parent
    while parent is not None:
        if parent.type == "heredoc_redirect":
            start = next((c for c in parent.children if c.type == "heredoc_start"), None)
            text = (start.text or b"") if start is not None else b""
            return any(q in text for q in (b"'", b'"', b"\\"))
        parent = parent.parent
    return False


def _site(node: Node) -> tuple[str, str | None] | None:
    """(site, fixed kind) when a mutant may replace `node`, else None."""
    if node.type == "command" and node.child_by_field_name("name") is not None:
        return "command", None
    if node.type in ("simple_expansion", "expansion") and not _quoted_heredoc(node):
        return "expansion", None
    parent = node.parent
    if node.type == "file_redirect":
        target = node.child_by_field_name("destination")
        operator = node.children[0].type if node.children else ""
        if (
            target is None
            or (target.text or b"").strip(b"-").isdigit()
            or b"&" in (target.text or b"-")
        ):
            return None
        if operator in (">", ">>", ">|", "&>", "&>>"):
            return "redirect", "write"
        if operator == "<":
            return "redirect", "read"
        return None
    if parent is not None and parent.type == "command" and node.type in _OPERANDS:
        text = node.text or b""
        if text and not text.startswith(b"-") and parent.child_by_field_name("name") != node:
            return "operand", "read"
    return None


_OPERANDS = frozenset({"word", "string", "raw_string", "simple_expansion", "concatenation"})
_TARGETS = {"read": "secrets/key.txt", "write": "protected/f.txt"}


def mutants(unit: Unit, *, per_unit: int = 4, start: int = 0) -> list[Mutant]:
    """Up to `per_unit` mutants of `unit`, one per distinct (context, site) it offers.

    Sites: a command (replaced by a denied action), a parameter expansion (replaced by
    ``$(action)``), a redirection (its target becomes the protected file, or the secret for
    ``<``) and an operand of a command (it becomes the secret's path: the original program
    then reads it, or only names it). The kinds of action take turns (from `start`) at the
    first two sites, so every kind meets every context."""
    data = unit.text.encode("utf-8")
    tree = parser().parse(data)
    root = tree.root_node
    found: dict[tuple[str, str], tuple[int, int, str | None]] = {}
    for node in _descendants(root):
        site = _site(node)
        if site is None:
            continue
        key = (_context(node, root), site[0])
        found.setdefault(key, (node.start_byte, node.end_byte, site[1]))
    kinds = list(PAYLOADS)
    out = []
    for number, ((context, site), (begin, end, fixed)) in enumerate(sorted(found.items())):
        if len(out) >= per_unit:
            break
        kind = fixed or kinds[(start + number) % len(kinds)]
        action = PAYLOADS[kind]
        if site == "command":
            # With spaces around it, so it never glues to its neighbours (`!cmd` must not
            # become the word `!rm`).
            replacement = f" {action} "
        elif site == "expansion":
            replacement = f"$({action})"
        elif site == "redirect":
            node_text = data[begin:end]
            operator = node_text[: len(node_text) - len(node_text.lstrip(b"&<>|"))]
            replacement = f"{operator.decode()} {_TARGETS[kind]}"
        else:
            replacement = _TARGETS[kind]
        text = (data[:begin] + replacement.encode() + data[end:]).decode("utf-8", "replace")
        out.append(Mutant(unit, text, kind, context, site))
    return out


# ── the project and the engine ──────────────────────────────────────────────────────────


@dataclass
class Decision:
    """The engine's decision for one command in every mode, and the longest one took."""

    command: str
    behaviors: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    error: str | None = None
    """The exception the check raised (a crash), if any."""

    @property
    def allowed_in(self) -> list[str]:
        return [m for m, b in self.behaviors.items() if b == "allow"]


def build_project(root: Path) -> Path:
    """The project tree under `root` (which must not exist): victim, secret, protected
    file, the deny rules in its settings, a home of its own. Returns the project folder."""
    project = root / "project"
    for rel, text in {
        "victim": VICTIM,
        "secrets/key.txt": f"token={SECRET}\n",
        "protected/f.txt": PROTECTED,
        "work/notes.txt": "notes\n",
        ".toolhost/settings.json": json.dumps({"permissions": {"deny": DENY}}) + "\n",
    }.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "home" / ".toolhost").mkdir(parents=True)
    (root / "home" / ".toolhost" / "settings.json").write_text("{}\n", encoding="utf-8")
    return project


class Project:
    """A session on a fresh project, Bash unsandboxed, for checks (nothing runs)."""

    def __init__(self, root: Path) -> None:
        from jupyter_toolhost import Session
        from jupyter_toolhost.core.context import SandboxOptions
        from jupyter_toolhost.model.anthropic_model import AnthropicModel
        from jupyter_toolhost.tools import builtin_tools

        self.root = root
        self.project = build_project(root)
        self.template = root.parent / f"{root.name}-template"
        shutil.copytree(root, self.template, symlinks=True)
        model = AnthropicModel(base_url="http://127.0.0.1:9", api_key="unused")
        self.session: Session = Session(
            tools=builtin_tools(cwd=self.project),
            model=model,
            model_id="claude-sonnet-4-5",
            cwd=self.project,
            write_transcript=False,
            sandbox=SandboxOptions(enabled=False),
        )
        problems = self.session.settings_problems
        assert not problems, problems
        self._runner = asyncio.Runner()

    def decide(self, command: str) -> Decision:
        """The engine's decision for `command` in each mode, each timed: `check_permission`
        (what `Session.check` runs: the engine's real decision, once per mode, nothing run,
        no one asked). An exception is recorded as a crash, not raised."""
        from jupyter_toolhost.orchestration.pipeline import find_tool, parse_input
        from jupyter_toolhost.permissions.check import check_permission

        loop = self.session._loop
        tool = find_tool("Bash", self.session.tools)
        assert tool is not None
        context = replace(self.session.context, cwd=loop.working_directory())
        decision = Decision(command)
        raw = {"command": command}
        for mode in MODES:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                work = check_permission(
                    tool=tool,
                    input=raw,
                    parsed=parse_input(tool, raw),
                    context=context,
                    engine=loop.pipeline.can_use_tool,
                    modes=(mode,),
                )
                report = self._runner.run(work)
            except Exception as exc:
                decision.error = f"{mode}: {type(exc).__name__}: {exc}"
                return decision
            decision.wall_s = max(decision.wall_s, time.perf_counter() - wall)
            decision.cpu_s = max(decision.cpu_s, time.thread_time() - cpu)
            assert not report.sandboxed, "the corpus is checked with the Bash sandbox off"
            decision.behaviors[mode] = report.modes[0].behavior
        return decision

    def check_cost(self, command: str, *, tries: int = 3) -> float:
        """The least CPU time of the slowest mode's check over `tries` decisions: what the
        check itself costs, without a one-off pause (a collection, a cache filling)."""
        return min(self.decide(command).cpu_s for _ in range(tries))

    def close(self) -> None:
        self._runner.close()


def sample(items: Sequence[T], count: int) -> list[T]:
    """A deterministic spread of `count` items (every n-th, in the given order)."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]
