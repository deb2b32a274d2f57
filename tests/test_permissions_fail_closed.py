"""The shell check fails closed: each example of what it used to treat as inert is a test.

Every example first runs in the real bash, unguarded, in a scratch project, to show that the
construct really deletes the victim, writes a protected file or prints the secret; then the
permission decision for the same line (the real Bash tool, the real resolver on that
project, the sandbox off) must not allow it in any mode, with the deny rules
``Bash(rm:*)``, ``Read(./secrets/**)`` and ``Edit(./protected/**)`` in force.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from jupyter_toolhost.permissions import OsResolver, compile_rules, decide
from jupyter_toolhost.permissions.shell import analyze
from jupyter_toolhost.tools.bash import TOOL as BASH_TOOL
from jupyter_toolhost.types import PermissionAllow, PermissionDeny, PermissionMode

BASH = shutil.which("bash")
SECRET = "SECRET-fc-5d1e"
DENY = ["Bash(rm:*)", "Read(./secrets/**)", "Edit(./protected/**)"]
MODES: tuple[PermissionMode, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "dontAsk",
    "bypassPermissions",
)
LOADER = next(
    (p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1") if Path(p).exists()),
    "/lib64/ld-linux-x86-64.so.2",
)


@dataclass(frozen=True)
class Example:
    command: str
    effect: str
    """``deletes``: victim.txt is gone; ``leaks``: the secret is printed; ``edits``:
    protected/f.txt changed."""
    cwd: str = "."
    rules: tuple[str, ...] = ()
    """Extra allow rules."""


EXAMPLES = [
    Example("a[$(rm -f victim.txt)]=1", "deletes"),
    Example("a[`rm -f victim.txt`]+=1", "deletes"),
    Example('printf -v "a[\\$(rm -f victim.txt)]" x', "deletes"),
    Example('test -v "a[\\$(rm -f victim.txt)]"', "deletes"),
    Example('declare "a[\\$(rm -f victim.txt)]=1"', "deletes"),
    Example("export a[$(rm -f victim.txt)]=1", "deletes"),
    Example("readonly a[$(rm -f victim.txt)]=1", "deletes"),
    Example('typeset "a[\\$(rm -f victim.txt)]=1"', "deletes"),
    Example("a[$(cat secrets/key.txt)]=1", "leaks"),
    Example("x='a[$(rm -f victim.txt)]'; echo $((x))", "deletes"),
    Example("x='a[$(rm -f victim.txt)]'; [[ $x -eq 1 ]]", "deletes"),
    Example("y=abc; x='a[$(rm -f victim.txt)]'; echo ${y:$x}", "deletes"),
    Example("x='a[$(rm -f victim.txt)]'; echo ${!x}", "deletes"),
    Example("x='$(rm -f victim.txt)'; echo ${x@P}", "deletes"),
    Example("shopt -s expand_aliases\nalias zz='rm -f victim.txt'\nzz", "deletes"),
    Example("ls() { rm -f victim.txt; }; ls", "deletes"),
    Example("trap 'rm -f victim.txt' EXIT", "deletes"),
    Example("hash -p /bin/rm del; del victim.txt", "deletes"),
    Example("setarch x86_64 rm victim.txt", "deletes"),
    Example("unshare rm victim.txt", "deletes"),
    Example("prlimit --nofile=1024 rm victim.txt", "deletes"),
    Example(f"{LOADER} /bin/rm victim.txt", "deletes"),
    Example("cp /bin/rm ./del && ./del victim.txt", "deletes"),
    Example("cat ~+/secrets/key.txt", "leaks"),
    Example("cd src && cat ~-/secrets/key.txt", "leaks"),
    Example("cat /proc/self/cwd/../secrets/key.txt", "leaks", cwd="src"),
    Example("ln -s ../secrets/key.txt work/k && cat work/k", "leaks"),
    Example("cat s*/key.txt", "leaks"),
    Example("cat [s]ecrets/key.txt", "leaks"),
    Example("head ?ecrets/*.txt", "leaks"),
    Example("cat l*/sec/key.txt", "leaks"),
    Example("cp /dev/null p*/f.txt", "edits"),
    Example("sed -i s/protected/changed/ [p]rotected/f.txt", "edits"),
    Example("echo changed | tee [[:lower:]]rotected/f.txt", "edits"),
]


def _project(root: Path) -> Path:
    project = root / "project"
    (project / "secrets").mkdir(parents=True)
    (project / "secrets" / "key.txt").write_text(f"token={SECRET}\n")
    (project / "protected").mkdir()
    (project / "protected" / "f.txt").write_text("protected\n")
    (project / "victim.txt").write_text("victim\n")
    (project / "src").mkdir()
    (project / "work").mkdir()
    (project / "links").mkdir()
    (project / "links" / "sec").symlink_to("../secrets")
    return project


def _effect(project: Path, output: str) -> set[str]:
    found = set()
    if not (project / "victim.txt").exists():
        found.add("deletes")
    if SECRET in output:
        found.add("leaks")
    if (project / "protected" / "f.txt").read_text() != "protected\n":
        found.add("edits")
    return found


def _decide(project: Path, command: str, mode: PermissionMode, *, cwd: str = ".") -> object:
    resolver = OsResolver(home=str(project.parent))
    rules = {"project": {"deny": DENY}}
    return decide(
        tool=BASH_TOOL,
        input=BASH_TOOL.input_model.model_validate({"command": command}),
        rules=compile_rules(rules, cwd=str(project), home=resolver.home()),
        mode=mode,
        cwd=str(project),
        resolver=resolver,
        shell_cwd=os.path.normpath(project / cwd),
        sandboxed=False,
    )


@pytest.mark.skipif(BASH is None and os.environ.get("CI") != "true", reason="needs bash")
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.command for e in EXAMPLES])
def test_the_example_does_harm_in_bash_and_is_never_allowed(
    example: Example, tmp_path: Path
) -> None:
    assert BASH is not None
    project = _project(tmp_path)
    env = {**os.environ, "HOME": str(tmp_path), "OLDPWD": str(project)}
    ran = subprocess.run(
        [BASH, "-c", example.command],
        cwd=project / example.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert example.effect in _effect(project, ran.stdout + ran.stderr), (
        f"the attack did nothing in bash, so the test proves nothing: {ran}"
    )
    fresh = _project(tmp_path / "again")
    for mode in MODES:
        started = time.perf_counter()
        result = _decide(fresh, example.command, mode, cwd=example.cwd)
        assert time.perf_counter() - started < 0.5  # (a loose bound; the timing test is below)
        assert not isinstance(result, PermissionAllow), (mode, result)
        if mode in ("dontAsk", "bypassPermissions"):
            assert isinstance(result, PermissionDeny), (mode, result)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("a[$(rm -f v)]=1", "An array subscript in this command can run a nested command"),
        ("echo $((x + 1))", "Arithmetic on a value that is not a literal number"),
        ("echo $((1 + $(rm a)))", "Arithmetic on a value that is not a literal number"),
        ("((x = $(rm a)))", "Arithmetic on a value that is not a literal number"),
        ("for ((i=0; i<3; i++)); do echo $i; done", "Arithmetic on a value"),
        ("echo ${!x}", "Indirect expansion"),
        ("echo ${x@P}", "Parameter transformation"),
        ("f() { :; }", "A function definition changes what a later command runs"),
        ("cat ~+/a", "Tilde expansion variants (~+, ~-, ~user) require manual approval"),
        ("cat ~root/a", "Tilde expansion variants"),
        ("x=~-/a", "Tilde expansion variants"),
        ("alias ll='ls -l'", "An alias changes what a later command runs"),
        ("shopt -s extglob", "shopt changes how later words are expanded"),
        ("hash -r", "hash changes which program"),
        ("enable -n echo", "enable changes which builtins"),
        ("let x=1", "let evaluates arithmetic"),
        ("declare -i n=1", "A nested command in this command can't be checked"),
        ("declare -n r=x", "A nested command in this command can't be checked"),
        ("unset 'a[$(id)]'", "An array subscript"),
        ("read 'a[$(id)]'", "An array subscript"),
        ("mapfile 'a[$(id)]' < /dev/null", "An array subscript"),
        ("[ -v 'a[$(id)]' ]", "An array subscript"),
        ("[[ -v a[$(id)] ]]", "An array subscript"),
        ("set -o vi", "`set -o vi` changes how later commands run"),
        ("set -k", "`set -k` changes how later commands run"),
        ("/lib64/ld-linux-x86-64.so.2 /bin/ls", "The ELF loader runs a program"),
        ("ld.so /bin/ls", "The ELF loader runs a program"),
    ],
)
def test_a_line_outside_the_subset_is_named_like_claude_code_names_it(
    command: str, reason: str
) -> None:
    analysis = analyze(command)
    assert analysis.commands == ()
    assert analysis.error is not None and analysis.error.startswith(reason), analysis.error


@pytest.mark.parametrize(
    "command",
    [
        "ls -la && git status",
        "echo $((1 + 2)) ${x:-default} ${#x} ${x%.csv} ${x/a/b} ${x^^} ${x:1:2}",
        'for f in *.csv; do wc -l "$f"; done',
        "set -euo pipefail; echo ok",
        "a[1]=x; echo ${a[@]} ${a[0]}",
        "declare -x NAME=1; export PATH_HINT=1; local y=2",
        "echo ~ ~/notes",
        '[[ -f data.csv && "$x" == *.csv ]]',
        "cat <<'EOF'\n$(( x )) ${!y}\nEOF",
        "echo 1 \\ 2 \\ 3",
    ],
)
def test_everyday_bash_stays_inside_the_subset(command: str) -> None:
    analysis = analyze(command)
    assert analysis.error is None, analysis.error


def test_escaped_spaces_before_numbers_are_one_word_each() -> None:
    (command,) = analyze("echo 1 \\ 2 \\ 3").commands
    assert command.words == ("echo", "1", " 2", " 3")


def test_posix_classes_in_globs_translate_without_a_nested_set() -> None:
    from jupyter_toolhost.permissions.paths import glob_shape

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shape = glob_shape("/p/*[[:digit:]].jpg")
        assert shape.fullmatch("/p/img7.jpg")
        assert not shape.fullmatch("/p/imgx.jpg")
        assert glob_shape("/p/[!a]x").fullmatch("/p/bx")
        assert not glob_shape("/p/[!a]x").fullmatch("/p/ax")
        assert glob_shape("/p/[]a]x").fullmatch("/p/]x")
