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

from jupyter_toolhost.core.types import PermissionAllow, PermissionDeny, PermissionMode
from jupyter_toolhost.permissions import OsResolver, compile_rules, decide
from jupyter_toolhost.permissions.startup import kernel_start_modules
from jupyter_toolhost.shell.commands import analyze
from jupyter_toolhost.tools.bash import TOOL as BASH_TOOL

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
    Example("CDPATH=.. cd secrets && cat key.txt", "leaks", cwd="src"),
    Example("HOME=secrets; cat ~/key.txt", "leaks"),
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
    kernel_start_modules()  # (derived once per process in a child interpreter: not a decision)
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
        ("coproc rm x", "coproc runs a command the check does not follow"),
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
        'echo "usage: diff <(a) <(b)"',
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


# ── code this session wrote ─────────────────────────────────────────────────────────────


def _decide_written(
    project: Path,
    command: str,
    written: tuple[str, ...],
    *,
    sandboxed: bool,
    deny: tuple[str, ...] = ("Read(./secrets/**)", "Bash(rm:*)"),
) -> object:
    resolver = OsResolver(home=str(project.parent))
    rules = {
        "project": {
            "deny": list(deny),
            "allow": ["Bash(python3:*)", "Bash(make:*)", "Bash(npm run test:*)"],
        }
    }
    return decide(
        tool=BASH_TOOL,
        input=BASH_TOOL.input_model.model_validate({"command": command}),
        rules=compile_rules(rules, cwd=str(project), home=resolver.home()),
        mode="bypassPermissions",
        cwd=str(project),
        resolver=resolver,
        sandboxed=sandboxed,
        written=tuple(str(project / w) for w in written),
    )


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("python3 src/report.py", ("src/report.py",)),
        ("python3 src/report.py", ("src/json.py",)),  # a module beside the script
        ("python3 -m src.report", ("src/report.py",)),
        ("make", ("Makefile",)),
        ("make report", ("src/report.py",)),  # a recipe may run it
        ("npm run test:unit", ("package.json",)),
        ("echo 'import os' > src/gen.py && python3 src/gen.py", ()),  # a redirection counts
    ],
)
def test_running_code_the_session_wrote_cant_be_checked(
    command: str, written: tuple[str, ...], tmp_path: Path
) -> None:
    project = _project(tmp_path)
    (project / "src" / "report.py").write_text("print('report')\n")
    for sandboxed in (False, True):  # (with a Bash deny rule, the sandbox does not waive it)
        result = _decide_written(project, command, written, sandboxed=sandboxed)
        assert isinstance(result, PermissionDeny), (sandboxed, result)
        assert "this session wrote" in result.message
    if written:
        # Without a Bash deny rule, the sandbox holds what the code can reach.
        sandboxed = _decide_written(
            project, command, written, sandboxed=True, deny=("Read(./secrets/**)",)
        )
        assert isinstance(sandboxed, PermissionAllow), sandboxed
    untouched = _decide_written(project, command, ("notes/todo.md",), sandboxed=False)
    if written:
        assert isinstance(untouched, PermissionAllow), untouched


def test_the_engine_remembers_what_allowed_calls_may_write(tmp_path: Path) -> None:
    import asyncio

    from jupyter_toolhost.core.context import (
        AppState,
        AppStateStore,
        ToolUseContext,
        ToolUseOptions,
    )
    from jupyter_toolhost.core.types import ToolPermissionContext
    from jupyter_toolhost.hooks.hooks import HookOutput
    from jupyter_toolhost.permissions import (
        ApprovalDecision,
        ApprovalRequest,
        PermissionEngine,
        PermissionRequest,
    )
    from jupyter_toolhost.tools import builtin_tools

    project = _project(tmp_path)
    tools = {t.name: t for t in builtin_tools(cwd=project)}
    rules = {"project": {"deny": ["Bash(rm:*)"], "allow": ["Bash(python3:*)"]}}
    permission = ToolPermissionContext(mode="acceptEdits", rules=rules)
    context = ToolUseContext(
        options=ToolUseOptions(tools=list(tools.values())),
        cwd=project,
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
    )
    asked: list[str] = []

    class Refuses:
        async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request.message)
            return ApprovalDecision("deny", "no")

    engine = PermissionEngine(resolver=OsResolver(home=str(tmp_path)), approver=Refuses())

    async def ask(tool: str, raw: dict[str, object]) -> object:
        found = tools[tool]
        parsed = found.input_model.model_validate(raw)
        request = PermissionRequest(found, parsed, raw, context, "toolu_1", HookOutput())
        return await engine(request)

    async def scenario() -> None:
        report = str(project / "src" / "report.py")
        wrote = await ask("Write", {"file_path": report, "content": "print(1)\n"})
        assert isinstance(wrote, PermissionAllow)
        assert report in context.get_app_state().written_paths
        ran = await ask("Bash", {"command": "python3 src/report.py"})
        assert not isinstance(ran, PermissionAllow)
        assert "this session wrote" in asked[-1]
        await ask("Bash", {"command": "echo x > work/out.txt"})
        assert str(project / "work" / "out.txt") in context.get_app_state().written_paths

    asyncio.run(scenario())


# ── the findings of the third-party corpus and the generator ─────────────────────────────


@pytest.mark.parametrize(
    "command",
    [
        "coproc { rm -f victim.txt; }; wait",
        "echo ${x:-`rm -f victim.txt`}",
        "x=1; echo ${x#$(rm -f victim.txt)}",
        "x=1; echo ${x/`rm -f victim.txt`/y}",
        "x=1; echo ${x:+`rm -f victim.txt`}",
        "echo ${x:=`rm -f victim.txt`}",
        'echo "${x:?`rm -f victim.txt`}"',
        "echo ${x%%$(rm -f victim.txt)}",
        "res[$(echo pwned > protected/f.txt)]+=' x'",
        "a=(); read 'a[$(rm -f victim.txt)]' <<< x",
        "echo pwned > ~+/protected/f.txt",
        "cat secrets/key.txt[Ap]",
        "cat secret?/key.txt",
        '! for i in 1; do sh -c "rm -f victim.txt"; done',
        "! while trap 'cat s*/key.txt' EXIT; do break; done",
        "coproc { find . -maxdepth 1 -name victim.txt -delete; }; wait",
        'coproc { bash <<< "rm -f victim.txt"; }',
        "time PS4='$(rm -f victim.txt)'; set -x; :",
    ],
)
def test_what_the_corpus_and_the_generator_found_is_never_allowed(
    command: str, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    for mode in MODES:
        result = _decide(project, command, mode)
        assert not isinstance(result, PermissionAllow), (mode, result)


def test_a_shell_folder_that_is_gone_stops_the_call_and_is_reset(tmp_path: Path) -> None:
    import asyncio

    from jupyter_toolhost.core.context import (
        AppState,
        AppStateStore,
        ToolUseContext,
        ToolUseOptions,
    )
    from jupyter_toolhost.core.types import ToolPermissionContext
    from jupyter_toolhost.hooks.hooks import HookOutput
    from jupyter_toolhost.permissions import PermissionEngine, PermissionRequest

    project = _project(tmp_path)
    gone = project / "tmpd"
    gone.mkdir()
    permission = ToolPermissionContext(mode="bypassPermissions", rules={})
    state = AppState(tool_permission_context=permission, shell_cwd=str(gone))
    context = ToolUseContext(
        options=ToolUseOptions(tools=[BASH_TOOL]), cwd=project, app_state=AppStateStore(state)
    )
    gone.rename(project / "moved")
    engine = PermissionEngine(resolver=OsResolver(home=str(tmp_path)))
    raw = {"command": "cat secrets/key.txt"}
    parsed = BASH_TOOL.input_model.model_validate(raw)
    request = PermissionRequest(BASH_TOOL, parsed, raw, context, "toolu_1", HookOutput())
    result = asyncio.run(engine(request))
    assert isinstance(result, PermissionDeny) and "no longer exists" in result.message
    assert context.get_app_state().shell_cwd is None


@pytest.mark.parametrize(
    "command",
    ["cp settings.json .gi[t]/hooks/", "mv f .g?t/hooks/", "cp settings.json .toolhos[t]/"],
)
def test_glob_spellings_of_the_protected_folders_ask_in_every_mode(
    command: str, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".toolhost").mkdir()
    for mode in MODES:
        result = _decide(project, command, mode)
        assert not isinstance(result, PermissionAllow), (mode, result)
        assert "protected folder" in getattr(result, "message", ""), (mode, result)


def test_each_check_takes_under_50_ms_of_cpu(tmp_path: Path) -> None:
    """CPU time (not wall time, which other processes share), best of three, caches cleared:
    every example above, a 1.6 kB function and a 20-command pipeline list."""
    from jupyter_toolhost.permissions import facts

    project = _project(tmp_path)
    body = "\n".join(
        f'  case "$c{i}" in --*) R=( $(compgen -W "--a --b" -- "$c{i}") );; esac' for i in range(20)
    )
    chain = " && ".join(f"grep -n 'p{i}' src/f{i}.py | sort | uniq -c | head -5" for i in range(20))
    slow = []
    for command in [*(e.command for e in EXAMPLES), f"f() {{\n{body}\n}}", chain]:
        best = float("inf")
        for _ in range(3):
            analyze.cache_clear()
            facts.traits_of.cache_clear()
            started = time.process_time()
            _decide(project, command, "default")
            best = min(best, time.process_time() - started)
        if best >= 0.05:
            slow.append((command, best))
    assert slow == []


# ── everyday commands stay unasked where that is safe ──────────────────────────────────


def _repository(tmp_path: Path) -> Path:
    project = _project(tmp_path)
    (project / "analysis.py").write_text("import json\nprint(json.dumps({'rows': 3}))\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    steps = (["git", "init", "-q"], ["git", "add", "analysis.py"], ["git", "commit", "-qm", "x"])
    for argv in steps:
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
    return project


@pytest.mark.parametrize(
    "command",
    [
        "echo $HOME",
        'printf "%s\\n" "$PATH"',
        "du -sh .",
        "find . -name '*.py'",
        "grep -rn import --include='*.py' .",
        "git log -p -1 -- analysis.py",
        "git blame analysis.py",
        "git diff",  # secrets/key.txt is untracked: git diff never prints untracked files
        "git log -p -1",
    ],
)
def test_everyday_commands_run_with_the_sandbox_off(command: str, tmp_path: Path) -> None:
    project = _repository(tmp_path)
    result = _decide(project, command, "default")
    assert isinstance(result, PermissionAllow), result


@pytest.mark.parametrize(
    "command",
    [
        "X=secrets; echo $X/*",  # the line sets the variable: not the user's environment
        "find . -name 'key*'",  # a denied file on disk matches
        "grep -rn token --include='*.txt' .",
        "du -a .",
        "ls -R",
        "git grep token",  # git grep can search untracked files
        "git diff --no-index secrets/../analysis.py analysis.py",
        "git log -p -- 'secrets/*'",
    ],
)
def test_their_neighbours_that_can_print_a_denied_path_still_ask(
    command: str, tmp_path: Path
) -> None:
    project = _repository(tmp_path)
    assert not isinstance(_decide(project, command, "default"), PermissionAllow)


def test_git_history_that_holds_a_denied_file_still_asks(tmp_path: Path) -> None:
    project = _repository(tmp_path)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["git", "add", "-f", "secrets/key.txt"], ["git", "commit", "-qm", "oops"]):
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
    for command in ("git diff HEAD~1", "git log -p -1", "git show"):
        assert not isinstance(_decide(project, command, "default"), PermissionAllow), command
    assert isinstance(_decide(project, "git log -p -1 -- analysis.py", "default"), PermissionAllow)


def test_inline_python_counts_as_a_script_only_in_the_sandbox_without_bash_denies() -> None:
    from jupyter_toolhost.permissions import PureResolver

    def run(deny: list[str], sandboxed: bool) -> object:
        rules = {"project": {"allow": ["Bash(python3:*)"], "deny": deny}}
        return decide(
            tool=BASH_TOOL,
            input=BASH_TOOL.input_model.model_validate({"command": "python3 -c 'print(1)'"}),
            rules=compile_rules(rules, cwd="/p", home="/h"),
            mode="default",
            cwd="/p",
            resolver=PureResolver(home="/h"),
            sandboxed=sandboxed,
        )

    assert isinstance(run(["Read(./secrets/**)"], sandboxed=True), PermissionAllow)
    assert not isinstance(run(["Read(./secrets/**)"], sandboxed=False), PermissionAllow)
    with_bash_deny = run(["Read(./secrets/**)", "Bash(rm:*)"], sandboxed=True)
    assert not isinstance(with_bash_deny, PermissionAllow)
