"""One judgement of "is this shell line read-only?" for the Bash tool (may it run beside
other calls?) and the permission engine (may it run without asking?): they differ only
where the engine lets ``echo $HOME`` pass: it reads the user's environment, not a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_toolhost.permissions.facts import call_facts
from jupyter_toolhost.permissions.paths import OsResolver
from jupyter_toolhost.shell.safety import line_is_read_only
from jupyter_toolhost.tools import builtin_tools

LINES = [
    "ls -la",
    "cat a.txt | grep x | wc -l",
    "cat < in.txt",
    "cat < *.txt",
    "cat a > out.txt",
    "> out.txt",
    "echo $HOME",
    "echo $(rm x)",
    "X=1; echo $X",
    "ls | xargs cat",
    "cd sub && ls",
    "cd - && cat a.txt",
    "popd; ls a",
    "git status",
    "sed -i s/a/b/ f",
    "rm -rf /",
    "ls 'unclosed",
    "",
]


@pytest.mark.parametrize("line", LINES)
def test_the_bash_tool_and_the_engine_share_one_answer(line: str, tmp_path: Path) -> None:
    bash = next(t for t in builtin_tools() if t.name == "Bash")
    parsed = bash.input_model.model_validate({"command": line})
    beside_others = bash.is_concurrency_safe(parsed)
    assert beside_others is line_is_read_only(line)
    facts = call_facts(
        bash, parsed, cwd=str(tmp_path), resolver=OsResolver(), working_dirs=[str(tmp_path)]
    )
    assert facts.read_only is line_is_read_only(line, environment_operands=True)
    if "$HOME" not in line:
        assert facts.read_only is beside_others


def test_what_each_caller_lets_pass() -> None:
    assert not line_is_read_only("cd sub && ls", environment_operands=True)
    assert not line_is_read_only("echo $HOME")
    assert line_is_read_only("echo $HOME", environment_operands=True)
    assert not line_is_read_only("X=1; echo $X", environment_operands=True)
    assert not line_is_read_only("cat < *.txt")  # a glob target is computed by the shell
