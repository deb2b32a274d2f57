"""Files the agent wrote in this session, and commands that would run them.

A rule such as ``Bash(python3:*)`` trusts the programs it names with the code they run; that
trust does not extend to code the agent wrote a moment ago. The engine records every path a
call it allowed may write (`written_by`: a Write/Edit/NotebookEdit path, a shell redirection
target, the operands of a shell command that copies, moves, links or edits files), in the
session's state (`AppState.written_paths`). Recording happens when the call is allowed, before it
runs, so a call that fails still counts (failing closed).

`runs_written` then says when a command runs such code: an interpreter whose script, or a
module beside it, was written (``python3 src/report.py`` after ``src/report.py`` or
``src/json.py`` was written); an interpreter running a module or inline code while the
shell's folder holds written code; ``make``, ``npm run``, ``pytest`` and other runners while
the shell's folder holds a written Makefile, ``package.json`` or source file. While the Bash
sandbox is off or any Bash deny rule exists, such a command can't be checked.
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


_NOT_CODE = frozenset(
    {".md", ".txt", ".rst", ".csv", ".tsv", ".log", ".png", ".jpg", ".jpeg", ".gif", ".svg",
     ".pdf", ".parquet", ".feather", ".html", ".out", ".orc", ".avro", ".xlsx"}
)  # fmt: skip
"""Written files that no runner executes or imports (everything else counts as code: a
folder, a file without a suffix, a pickle, a notebook, a build or package file)."""


def _code(path: str) -> bool:
    return posixpath.splitext(path)[1].lower() not in _NOT_CODE


def written_by(facts: CallFacts) -> list[str]:
    """The absolute paths this call may write, as far as the check can name them."""
    found: list[str] = []
    if facts.path is not None and facts.path.write:
        found.extend(facts.path.candidates)
    for item in facts.commands:
        for ref in item.write_targets:
            found.extend(ref.candidates)
        if item.command.name in _EDITORS and item.writes:
            for ref in item.paths:
                found.extend(ref.candidates)
    return found


def runs_written(item: CommandFacts, shell_dirs: Iterable[str], written: Collection[str]) -> str:
    """Why the command runs code this session wrote (empty when it does not)."""
    if not written or not item.command.parts:
        return ""
    name = item.command.name.rsplit("/", 1)[-1]
    interpreter = _INTERPRETER.fullmatch(name) is not None
    if not interpreter and name not in _RUNNERS:
        return ""
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
        if _code(path) and any(is_inside(path, place) for place in places):
            return (
                f"`{item.command.text}` runs code from {places[0]}, where this session wrote "
                f"{path}, so what it does can't be checked before it runs"
            )
    return ""
