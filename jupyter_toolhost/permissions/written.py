"""Files the agent wrote in this session, and commands that would run them.

A rule such as ``Bash(python3:*)`` trusts the programs it names with the code they run; that
trust does not extend to code the agent wrote a moment ago. The engine records every path a
call it allowed may write (`written_by`: a Write/Edit/NotebookEdit path, a shell redirection
target, the operands of a shell command that copies, moves, links or edits files), in the
session's state (`AppState.written_paths`). Recording happens when the call is allowed, before it
runs, so a call that fails still counts (failing closed).

`runs_written` then says when a command would run such code, by what the program runs:
an interpreter whose script, or a module beside it, was written (``python3 src/report.py``
after ``src/report.py`` or ``src/json.py`` was written); an interpreter running a module or
inline code while the shell's folder holds written code *of its language*; ``make`` while the
folder holds a written Makefile or script (a recipe may run it); ``npm run`` and its kin with
a written ``package.json`` or script; ``pytest``, ``tox`` and ``nox`` with written Python
files or their configuration; other runners with any written file that may be code. A file
that can't be code for the program (``notes.md``, or ``allowed`` made by ``touch``, for
Python) doesn't count, and ``--version``, ``--help`` or ``-V`` alone run nothing (but for
the test runners and Jupyter, which read local code or configuration to show their help).
While the Bash sandbox is off or any Bash deny rule exists, such a command can't be checked.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable

from .facts import CallFacts, CommandFacts
from .paths import is_inside

_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|deno|bun|perl|ruby|php|lua|Rscript|R|bash|sh|zsh|dash)[\d.]*"
)
_RUNNERS = frozenset(
    {"make", "gmake", "npm", "npx", "yarn", "pnpm", "pytest", "py.test", "tox", "nox",
     "cargo", "go", "mvn", "gradle", "rake", "bundle", "poetry", "uv", "hatch", "pip", "pip3",
     "just", "ninja", "cmake", "jupyter", "ipython"}
)  # fmt: skip
"""Programs that run code found in the folder they start in (build files, test files,
package scripts, an installable package)."""
_EDITORS = frozenset(
    {"cp", "mv", "ln", "tee", "touch", "install", "dd", "sed", "rsync", "patch", "truncate",
     "unzip", "tar", "git", "curl", "wget", "mkdir"}
)  # fmt: skip
"""Shell programs whose operands may be the files they create or change."""
_TREE_WRITERS = frozenset({"cp", "mv", "ln", "install", "rsync", "unzip", "tar", "git"})
"""Of those, the ones whose operand may be a folder they fill (or an archive they unpack):
what lands inside is not known, so it is recorded with a trailing ``/`` and counts as code
for every program (`_code`)."""


_NOT_CODE = frozenset(
    {".md", ".txt", ".rst", ".csv", ".tsv", ".log", ".png", ".jpg", ".jpeg", ".gif", ".svg",
     ".pdf", ".parquet", ".feather", ".html", ".out", ".orc", ".avro", ".xlsx"}
)  # fmt: skip
"""Written files that no runner executes or imports (for the runners without a list of
their own, everything else counts as code: a folder, a file without a suffix, a notebook)."""

_PYTHON = frozenset({".py", ".pyc", ".pyw", ".pth", ".so", ".pyd"})
_NODE = frozenset({".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".node"})
_SHELL = frozenset({".sh", ".bash", ".zsh"})
_LANGUAGES: dict[str, frozenset[str]] = {
    "python": _PYTHON, "pypy": _PYTHON, "node": _NODE, "nodejs": _NODE, "deno": _NODE,
    "bun": _NODE, "perl": frozenset({".pl", ".pm"}), "ruby": frozenset({".rb"}),
    "php": frozenset({".php"}), "lua": frozenset({".lua"}), "Rscript": frozenset({".r"}),
    "R": frozenset({".r"}), "bash": _SHELL, "sh": _SHELL, "zsh": _SHELL, "dash": _SHELL,
}  # fmt: skip
"""What each interpreter runs or imports, by suffix (compared lower-cased)."""
_SCRIPTS: frozenset[str] = frozenset[str]().union(*_LANGUAGES.values())
_MAKE = frozenset({"makefile", "gnumakefile"})
_RUNNER_CODE: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # runner: (file names, suffixes) — a recipe or a package script may run any script
    "make": (_MAKE, _SCRIPTS | {".mk"}),
    "gmake": (_MAKE, _SCRIPTS | {".mk"}),
    "npm": (frozenset({"package.json"}), _NODE | _SHELL),
    "npx": (frozenset({"package.json"}), _NODE | _SHELL),
    "yarn": (frozenset({"package.json", ".yarnrc.yml"}), _NODE | _SHELL),
    "pnpm": (frozenset({"package.json"}), _NODE | _SHELL),
    "pytest": (frozenset({"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}), _PYTHON),
    "py.test": (frozenset({"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}), _PYTHON),
    "tox": (frozenset({"tox.ini", "setup.cfg", "pyproject.toml"}), _PYTHON),
    "nox": (frozenset(), _PYTHON),
}
_NOTHING_RUNS = frozenset({"--version", "--help", "-V"})
"""Alone, these make a program print and exit without running anything of the folder's."""
_READS_CONFIG_FOR_HELP = frozenset({"pytest", "py.test", "tox", "nox", "jupyter", "ipython"})
"""Runners that load local code or configuration (conftest.py, jupyter_*_config.py) even
to show their help or version."""


def _code(path: str, program: str) -> bool:
    """Whether a written `path` can be code that `program` runs or imports."""
    if path.endswith("/"):
        return True  # (a folder a copy or an unpacking may have filled: anything inside)
    name = posixpath.basename(path).lower()
    suffix = posixpath.splitext(name)[1]
    if program in _LANGUAGES:
        return suffix in _LANGUAGES[program]
    if program in _RUNNER_CODE:
        names, suffixes = _RUNNER_CODE[program]
        return name in names or suffix in suffixes
    return suffix not in _NOT_CODE


def written_by(facts: CallFacts) -> list[str]:
    """The absolute paths this call may write, as far as the check can name them."""
    found: list[str] = []
    if facts.path is not None and facts.path.write:
        found.extend(facts.path.candidates)
    for item in facts.commands:
        for ref in item.write_targets:
            found.extend(ref.candidates)
        if item.command.name in _EDITORS and item.writes:
            tree = "/" if item.command.name in _TREE_WRITERS else ""
            for ref in item.paths:
                found.extend(c.rstrip("/") + tree for c in ref.candidates)
    return found


def runs_written(item: CommandFacts, shell_dirs: Iterable[str], written: Collection[str]) -> str:
    """Why the command runs code this session wrote (empty when it does not)."""
    if not written or not item.command.parts:
        return ""
    name = item.command.name.rsplit("/", 1)[-1]
    match = _INTERPRETER.fullmatch(name)
    interpreter = match is not None
    if not interpreter and name not in _RUNNERS:
        return ""
    program = match.group(1) if match is not None else name
    args = [w.value for w in item.command.parts[1:]]
    if args and set(args) <= _NOTHING_RUNS and program not in _READS_CONFIG_FOR_HELP:
        return ""  # (`python3 --version`: prints and exits)
    places = list(shell_dirs)
    if interpreter:
        scripts = [ref for ref in item.paths if ref.candidates]
        if scripts:
            places = [posixpath.dirname(c) for c in scripts[0].candidates]
            for candidate in scripts[0].candidates:
                if any(is_inside(candidate, w) for w in written):
                    return (
                        f"`{item.command.text}` runs {scripts[0].written}, which this session "
                        "wrote, so what it does can't be checked before it runs"
                    )
    for path in written:
        if _code(path, program) and any(is_inside(path, place) for place in places):
            return (
                f"`{item.command.text}` runs code from {places[0]}, where this session wrote "
                f"{path}, so what it does can't be checked before it runs"
            )
    return ""
