"""Shell commands read from bash's syntax tree (tree-sitter-bash), as permission rules see them.

Every construct the analyser follows, every known way to hide a denied program, and the
inputs that must fail closed. ANSI-C quoting and brace expansion are checked against the real
bash where it is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from test_permissions_tools import SHELL, run_decide

from jupyter_toolhost.shell.commands import (
    ANSI_C_NAME,
    BRACE_EXPANSION,
    EVAL,
    HIDDEN,
    NESTED_NAME,
    UNKNOWN_PROGRAM,
    Command,
    ShellAnalysis,
    analyze,
)
from jupyter_toolhost.shell.words import decode_ansi_c

BASH = shutil.which("bash")
FIND_DELETE = "find with '-delete' deletes files and cannot be auto-allowed"
DENY_RM = {"session": {"deny": ["Bash(rm:*)"], "allow": ["Bash(echo:*)", "Bash(ls:*)"]}}


def _commands(command: str) -> tuple[Command, ...]:
    analysis = analyze(command)
    assert analysis.error is None, analysis.error
    return analysis.commands


def _texts(command: str) -> list[str]:
    return [c.text for c in _commands(command)]


def _nested(command: str) -> list[str]:
    return [c.text for c in _commands(command) if c.nested]


# ── constructs ──────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("a | b | c", ["a", "b", "c"]),
        ("a && b || c; d & e\nf", ["a", "b", "c", "d", "e", "f"]),
        ("(cd x && rm y)", ["cd x", "rm y"]),
        ("{ ls; rm y; }", ["ls", "rm y"]),
        (
            "if test -f a; then rm a; elif true; then rm b; else rm c; fi",
            ["test -f a", "rm a", "true", "rm b", "rm c"],
        ),
        ("while read l; do rm $l; done", ["read l", "rm '$l'"]),
        ("until false; do rm z; done", ["false", "rm z"]),
        ("for f in a b; do rm $f; done", ["rm '$f'"]),
        ("case $x in a) rm y;; *) ls;; esac", ["rm y", "ls"]),
        ("! rm q", ["rm q"]),
        ("echo $((1 + 2))", ["echo '$((1 + 2))'"]),
        ("echo a\\ b \\; c", ["echo 'a b' ';' c"]),
        ("echo \"a \\$b \\x\" 'c \\d'", ["echo 'a $b \\x' 'c \\d'"]),
        ('echo $"hello"', ["echo hello"]),
        ("r\\\nm -rf x", ["rm -rf x"]),
        ("echo 'a\\\nb'", ["echo 'a\\\nb'"]),
        ("ls # ; rm -rf /", ["ls"]),
    ],
)  # fmt: skip
def test_every_command_of_a_construct_is_found(command: str, expected: list[str]) -> None:
    assert _texts(command) == expected


@pytest.mark.parametrize(
    ("command", "nested"),
    [
        ("echo $(rm a) `rm b`", ["rm a", "rm b"]),
        ('echo "x$(rm a)y"', ["rm a"]),
        ("echo ${X:-$(rm a)}", ["rm a"]),
        ("[[ -f $(rm a) ]]", ["rm a"]),
        ("diff <(rm a) >(rm b)", ["rm a", "rm b"]),
        ("cat <<<\"$(rm a)\"", ["rm a"]),
        ("cat <<EOF\nline $(rm a) \\`b\\` \\$(c)\nEOF", ["rm a"]),
        ("for f in $(rm a); do :; done", ["rm a"]),
        ("a=(1 $(rm a))", ["rm a"]),
        ("export X=$(rm a)", ["rm a"]),
        ("echo $(echo $(echo $(rm a)))", ["rm a", "echo '$(rm a)'", "echo '$(echo $(rm a))'"]),
        ("echo `echo \\`rm a\\``", ["rm a", "echo '`rm a`'"]),
    ],
)  # fmt: skip
def test_substitutions_anywhere_are_nested_commands(command: str, nested: list[str]) -> None:
    assert _nested(command) == nested
    assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior == "deny"


def test_here_documents_are_data_but_their_substitutions_run() -> None:
    assert _texts("cat <<'EOF'\nrm -rf /\n$(rm x)\nEOF\nls") == ["cat", "ls"]
    assert _texts('cat <<"EOF"\n$(rm x)\nEOF') == ["cat"]
    assert _texts("cat <<EOF | wc -l\nrm -rf /\nEOF") == ["cat", "wc -l"]
    # tree-sitter-bash does not read backticks in a here-document, nor ``$(...)`` after the
    # tabs of ``<<-``: the parse fails rather than miss them.
    for unread in ("cat <<EOF\n`rm x`\nEOF", "cat <<-EOF\n\t$(rm x)\n\tEOF"):
        assert analyze(unread).error is not None
        assert run_decide(SHELL, {"command": unread}, rules=DENY_RM).behavior == "ask"
    (cat, *_rest) = _commands("cat <<EOF\nhi\nEOF")
    assert [(r.op, r.target.value) for r in cat.redirects] == [("<<", "EOF")]
    assert cat.file_redirects() == []


def test_redirections_keep_their_descriptors() -> None:
    (command,) = _commands(
        "make 2>&1 >out.log 2>>/dev/null &>all.txt &>>more.txt >|forced <in.txt 3>&-"
    )
    assert [(r.op, r.fd, r.target.value) for r in command.redirects] == [
        (">&", "2", "1"),
        (">", "", "out.log"),
        (">>", "2", "/dev/null"),
        ("&>", "&", "all.txt"),
        ("&>>", "&", "more.txt"),
        (">|", "", "forced"),
        ("<", "", "in.txt"),
        (">&", "3", "-"),
    ]
    targets = [r.target.value for r in command.file_redirects()]
    assert targets == ["out.log", "all.txt", "more.txt", "forced", "in.txt"]
    (spread,) = _commands("cmd > out arg")
    assert spread.text == "cmd arg" and spread.redirects[0].target.value == "out"
    assert _commands("{ ls; } > out")[-1].redirects[0].target.value == "out"


def test_words_keep_what_the_shell_does_to_them() -> None:
    (pwd, command) = _commands("cp \"$HOME\"/a *.py 'lit*' ~/x $(pwd)")
    assert pwd.text == "pwd" and pwd.nested
    home, glob, literal, tilde, sub = command.parts[1:]
    assert home.dynamic and home.quoted and home.value == "$HOME/a"
    assert glob.glob and not glob.dynamic
    assert literal.quoted and not literal.glob and literal.value == "lit*"
    assert tilde.value == "~/x" and not tilde.quoted
    assert sub.dynamic and sub.substituted and sub.value == "$(pwd)"


# ── quoting decoded like bash ───────────────────────────────────────────────────────

ANSI_C_CASES = [
    r"\x72m", r"\162\155", r"\u0072\U0000006d", r"a\tb\nc", r"\e[0m\E", r"\cA\c?\ca",
    r"it\'s \"q\" \\ \? \a\b\f\v\r", r"\q\z", r"\x4\x41g", r"\0101\777", r"a\x00b",
    r"\u00e9\U0001F600", r"\xc3\xa9", r"\x", r"\u", r"\c",
]  # fmt: skip


@pytest.mark.parametrize("body", ANSI_C_CASES)
def test_ansi_c_quoting_is_decoded(body: str) -> None:
    (command,) = _commands(f"echo $'{body}'")
    assert command.parts[1].value == decode_ansi_c(body)
    if BASH is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI compares ANSI-C decoding with the real bash")
        pytest.skip("bash is not installed")
    shown = subprocess.run(
        [BASH, "-c", f"printf %s $'{body}'"], capture_output=True, check=True,
        env={"LC_ALL": "C.UTF-8"},
    ).stdout  # fmt: skip
    assert command.parts[1].value == shown.decode("utf-8", "replace")


def test_ansi_c_examples_without_bash() -> None:
    assert decode_ansi_c(r"\x72m") == "rm"
    assert decode_ansi_c(r"\162\155") == "rm"
    assert decode_ansi_c(r"\u0072\U0000006D") == "rm"
    assert decode_ansi_c(r"\cA\e\q") == "\x01\x1b\\q"
    assert decode_ansi_c(r"a\0b") == "a"


@pytest.mark.parametrize(
    ("word", "expanded"),
    [
        ("{a,b}", ["a", "b"]),
        ("x{1..3}y", ["x1y", "x2y", "x3y"]),
        ("{01..03}", ["01", "02", "03"]),
        ("{c..a}", ["c", "b", "a"]),
        ("{1..10..4}", ["1", "5", "9"]),
        ("{a,b}{1,2}", ["a1", "a2", "b1", "b2"]),
        ("{a,{b,c}}", ["a", "b", "c"]),
        ("{a}", ["{a}"]),
        ("{}", ["{}"]),
        ("'{a,b}'", ["{a,b}"]),
        ("\\{a,b}", ["{a,b}"]),
        ("{a,'b c'}", ["a", "b c"]),
        ("${x}{a,b}", ["${x}a", "${x}b"]),
    ],
)
def test_brace_expansion_follows_bash(word: str, expanded: list[str]) -> None:
    (command,) = _commands(f"echo {word}")
    assert [w.value for w in command.parts[1:]] == expanded
    if BASH is not None and "$" not in word:
        shown = subprocess.run(
            [BASH, "-c", f"printf '%s\\n' {word}"], capture_output=True, check=True
        )
        assert shown.stdout.decode().splitlines() == expanded


def test_a_huge_brace_expansion_is_not_expanded_and_not_trusted() -> None:
    (command,) = _commands("echo {1..100000}")
    assert [w.value for w in command.parts] == ["echo", "{1..100000}"]
    assert command.parts[1].glob  # treated like a glob: its files are not known


# ── the program a command really runs ───────────────────────────────────────────────


@pytest.mark.parametrize(
    "command",
    [
        "/bin/rm -rf x", "/usr/bin/rm -rf x", "/usr/local/bin/rm x", "//bin/../bin/rm x",
        "'/bin/rm' x", "env rm x", "/usr/bin/env rm -rf x", "env -i FOO=1 -u BAR rm x",
        "command rm x", "builtin rm x", "exec rm x", "nice rm x", "nice -n 5 rm x",
        "nice -5 rm x", "nohup rm x", "timeout 5 rm x", "timeout -k 1 -s KILL 5s rm x",
        "time rm x", "time -p rm x", "xargs rm", "xargs -0 -n 1 rm", "busybox rm -rf x",
        "sudo rm x", "sudo -u root -E rm x", "doas -u root rm x", "stdbuf -oL -eL rm x",
        "ionice -c 3 rm x", "setsid -f rm x", "chrt -f 10 rm x", "taskset -c 0-3 rm x",
        "unbuffer rm x", "flock /tmp/lock rm x", "flock -w 5 /tmp/lock rm x",
        "chroot /srv rm x", '"timeout" 5 rm x', "sudo /usr/bin/env nice /bin/rm x",
    ],
)  # fmt: skip
def test_wrappers_and_paths_resolve_to_the_program(command: str) -> None:
    commands = _commands(command)
    assert commands[0].name == "rm" and commands[0].text.startswith("rm")
    assert commands[0].source_text != commands[0].text or command.startswith("rm")
    assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior == "deny"


def test_paths_outside_the_system_directories_stay_as_written() -> None:
    assert _texts("./script.sh --fast") == ["./script.sh --fast"]
    assert _texts("/opt/tools/rm x") == ["/opt/tools/rm x"]
    assert _texts("./rm x") == ["./rm x"]
    allow_rm = {"session": {"allow": ["Bash(rm:*)"]}}
    assert run_decide(SHELL, {"command": "/tmp/evil/rm x"}, rules=allow_rm).behavior == "ask"


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("timeout --bogus 1 rm x", "`timeout` option `--bogus` is not understood"),
        ("sudo -Z rm x", "`sudo` option `-Z` is not understood"),
        ("env --weird rm x", "`env` option `--weird` is not understood"),
    ],
)
def test_an_option_of_a_wrapper_not_understood_makes_it_opaque(command: str, reason: str) -> None:
    (first,) = _commands(command)
    assert first.opaque and first.risky and first.risk_reason == reason
    assert first.name == "rm"


def test_wrappers_that_run_no_command_stay_the_command() -> None:
    assert _texts("command -v rm") == ["command -v rm"]
    assert _texts("ionice -p 123") == ["ionice -p 123"]
    assert _texts("busybox") == ["busybox"]
    assert _texts("echo hi | sudo tee /etc/x") == ["echo hi", "tee /etc/x"]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("{rm,-rf,x}", BRACE_EXPANSION),
        ("x && {rm,-rf,x}", BRACE_EXPANSION),
        ("{rm,-rf,x};}", BRACE_EXPANSION),
        ("$({rm,-rf,x})", BRACE_EXPANSION),
        ("sudo {rm,-rf,x}", BRACE_EXPANSION),
        ("$'\\x72m' -rf x", ANSI_C_NAME),
        ("$'\\162\\155' -rf x", ANSI_C_NAME),
        ('$"rm" -rf x', ANSI_C_NAME),
    ],
)
def test_hidden_rm_resolves_to_rm_and_is_risky(command: str, reason: str) -> None:
    (found,) = [c for c in _commands(command) if c.name == "rm"]
    assert found.text == "rm -rf x" and found.risky and found.risk_reason == reason
    assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior == "deny"


@pytest.mark.parametrize(
    ("command", "flag", "reason"),
    [
        ("$(echo rm) -rf x", "opaque", NESTED_NAME),
        ("`echo rm` -rf x", "opaque", NESTED_NAME),
        ("x=rm; $x -rf y", "opaque", UNKNOWN_PROGRAM),
        ("${CMD} -rf y", "opaque", UNKNOWN_PROGRAM),
        ("r* -rf y", "opaque", UNKNOWN_PROGRAM),
        ("eval rm -rf x", "runs_code", EVAL),
        ("sh -c 'rm -rf x'", "runs_code", "`sh -c` runs inline code"),
        ("bash -lc \"$CODE\"", "runs_code", "`bash -c` runs inline code"),
        ("bash script.sh", "runs_code", "`bash` runs a script that can't be checked"),
        ("python -c 'import os'", "runs_code", "`python -c` runs inline code"),
        ("python3.12 -c 'import os'", "runs_code", "`python3.12 -c` runs inline code"),
        ("node -e 'x'", "runs_code", "`node -e` runs inline code"),
        ("perl -e 'x'", "runs_code", "`perl -e` runs inline code"),
        ("source ./env.sh", "runs_code", "`source` runs a script's code in this shell"),
        (". ./env.sh", "runs_code", "`.` runs a script's code in this shell"),
        ("find . -exec rm {} +", "runs_code", "find with '-exec' runs another command"),
        ("find . -delete", "runs_code", FIND_DELETE),
        ("env -S 'rm -rf x'", "runs_code", "`env -S` runs its argument as a command line"),
        ("flock /tmp/l -c 'rm x'", "runs_code", "`sh -c` runs inline code"),
        ("PATH=/tmp ls", "env_hazard", "Assignment to PATH changes what runs"),
        ("LD_PRELOAD=/x.so ls", "env_hazard", "Assignment to LD_PRELOAD changes what runs"),
        ("env PATH=/tmp ls", "env_hazard", "Assignment to PATH changes what runs"),
        ("export PATH=/tmp", "env_hazard", "Assignment to PATH changes what runs"),
        ("ls \u200b-la", "suspicious", HIDDEN),
        ("ls \u202e-la", "suspicious", HIDDEN),
        ("ls\x1b -la", "suspicious", HIDDEN),
    ],
)  # fmt: skip
def test_risky_commands_say_why(command: str, flag: str, reason: str) -> None:
    flagged = [c for c in _commands(command) if getattr(c, flag)]
    assert flagged and flagged[0].risky and flagged[0].risk_reason == reason
    assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior != "allow"


def test_inline_code_is_analysed_when_it_is_literal() -> None:
    assert _nested("sh -c 'ls && rm x'") == ["ls", "rm x"]
    assert _nested("eval 'rm x'") == ["rm x"]
    assert _nested("find . -exec rm {} +") == ["rm"]
    for command in ("sh -c 'rm x'", "eval 'rm x'", "find . -exec rm {} +", "env -S 'rm x'"):
        assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior == "deny"


# ── normal commands are unchanged ───────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("command", "texts"),
    [
        ("git log --oneline | head -5", ["git log --oneline", "head -5"]),
        ("ls -la src && cat README.md", ["ls -la src", "cat README.md"]),
        ("grep -rn TODO src | sort | uniq -c", ["grep -rn TODO src", "sort", "uniq -c"]),
        ("FOO=1 BAR='x y' make test", ["make test"]),
        ("echo 'a && b' \"c; d\"", ["echo 'a && b' 'c; d'"]),
    ],
)
def test_normal_commands_are_not_risky(command: str, texts: list[str]) -> None:
    commands = _commands(command)
    assert [c.text for c in commands] == texts
    assert not any(c.risky or c.risk_reason for c in commands)


# ── failing closed ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "command",
    [
        "echo 'open", 'echo "open', "echo $(ls", "echo `ls", "(ls", "ls)", "ls &&",
        "if x; then ls", "cat <<EOF\nno end", "echo ${", "echo a\\", "4<>f cat",
        "case x in", "for", "echo a\0b",
    ],
)  # fmt: skip
def test_unparseable_commands_carry_an_error(command: str) -> None:
    analysis = analyze(command)
    assert analysis.commands == ()
    assert analysis.error is not None and analysis.error.startswith("could not parse the command: ")
    assert run_decide(SHELL, {"command": command}, rules=DENY_RM).behavior == "ask"


def test_the_error_says_where() -> None:
    assert (analyze("echo $(ls").error or "").startswith("could not parse the command: missing ')'")
    assert (
        analyze("ls )").error == "could not parse the command: unexpected ')' at line 1, column 4"
    )
    assert "NUL" in (analyze("ls\0rm").error or "")


def test_deeply_nested_input_fails_closed_without_crashing() -> None:
    deep = "echo " + "$(echo " * 300 + "x" + ")" * 300
    assert analyze(deep).error is not None
    groups = "(" * 300 + "rm x" + ")" * 300
    assert analyze(groups).error is not None
    backticks = "echo `echo \\`echo \\\\\\`rm x\\\\\\`\\``"
    assert "rm x" in _nested(backticks)
    long_chain = " && ".join(["ls"] * 3000) + " && rm x"
    commands = _commands(long_chain)
    assert len(commands) == 3001 and commands[-1].text == "rm x"


def test_a_100_kb_command_is_analysed() -> None:
    big = "echo " + "a" * 100_000 + " && rm x"
    assert _texts(big) == ["echo " + "a" * 100_000, "rm x"]
    many = "; ".join(f"echo {i}" for i in range(12_000)) + "; rm y"
    assert len(many) > 100_000
    assert _texts(many)[-1] == "rm y"
    assert run_decide(SHELL, {"command": many}, rules=DENY_RM).behavior == "deny"


# ── the analysis is a value, parsed once ────────────────────────────────────────────


def test_analysis_is_frozen_hashable_and_cached() -> None:
    first = analyze("ls -la | wc -l")
    assert isinstance(first, ShellAnalysis) and hash(first) == hash(analyze("ls -la | wc -l"))
    assert analyze("ls -la | wc -l") is first
    with pytest.raises(AttributeError):
        first.commands[0].risk_reason = "x"  # type: ignore[misc]


def test_importing_the_permissions_package_does_not_load_tree_sitter() -> None:
    code = (
        "import sys, jupyter_toolhost.permissions as p\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "p.analyze('ls')\n"
        "assert 'tree_sitter' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
