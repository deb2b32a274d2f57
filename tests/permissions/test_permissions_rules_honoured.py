"""What people allowed is honoured as Claude Code honours it (issue 41), and no deny weakens.

Every example of the issue is a case here, each through the real `decide()` with the real
built-in tools (Bash, Skill, WebFetch, Grep): Claude Code's escaping in saved rules, a rule
naming a whole compound line, an exact rule over "can't be checked", a URL that is not a
path, valid bash the grammar could not read, rules for other tools kept (and shown inactive),
reasons that name the rule to add, and "code this session wrote" by what would run. Then
hypothesis over the rule grammar: an exact rule allows its line and nothing that differs,
and a deny rule beats it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jupyter_toolhost.core.types import (
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionMode,
    PermissionResult,
    RuleBehavior,
)
from jupyter_toolhost.permissions import (
    OsResolver,
    PureResolver,
    compile_rules,
    decide,
    parse_rule,
)
from jupyter_toolhost.permissions.rules.escapes import escape, unescape
from jupyter_toolhost.permissions.rules.inactive import inactive_reason
from jupyter_toolhost.permissions.settings.settings import load_settings
from jupyter_toolhost.shell.commands import analyze
from jupyter_toolhost.tools import builtin_tools

CWD = "/home/user/project"
TOOLS = {t.name: t for t in builtin_tools(cwd=CWD)}
ALLOWING_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "dontAsk", "auto")
"""The modes in which allow rules decide (bypassPermissions allows anyway; plan runs only
what is read-only)."""


def check(
    command: str | dict[str, Any],
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    mode: PermissionMode = "default",
    tool: str = "Bash",
    sandboxed: bool = False,
    written: tuple[str, ...] = (),
) -> PermissionResult:
    found = TOOLS[tool]
    raw = {"command": command} if isinstance(command, str) else command
    rules: dict[str, dict[RuleBehavior, tuple[str, ...]]] = {
        "projectSettings": {"allow": allow, "deny": deny}
    }
    resolver = PureResolver(home="/home/user")
    return decide(
        tool=found,
        input=found.input_model.model_validate(raw),
        rules=compile_rules(rules, cwd=CWD, home=resolver.home()),
        mode=mode,
        cwd=CWD,
        resolver=resolver,
        sandboxed=sandboxed,
        written=tuple(f"{CWD}/{w}" for w in written),
    )


def allowed_by(result: PermissionResult, rule: str) -> bool:
    reason = result.reason if isinstance(result, PermissionAllow) else None
    return reason is not None and reason.detail == f"allow rule {rule}"


# ── Claude Code's escaping in saved rules ───────────────────────────────────────────────


@pytest.mark.parametrize("mode", ALLOWING_MODES)
@pytest.mark.parametrize("sandboxed", [False, True])
def test_escaped_parentheses_in_a_saved_rule_are_parentheses(
    mode: PermissionMode, sandboxed: bool
) -> None:
    saved = 'Bash(echo "Waiting... \\($i/6\\)")'
    assert parse_rule(saved).specifier == 'echo "Waiting... ($i/6)"'
    result = check('echo "Waiting... ($i/6)"', allow=(saved,), mode=mode, sandboxed=sandboxed)
    assert isinstance(result, PermissionAllow), result
    # a command that is not read-only, so only the rule can allow it
    saved = 'Bash(npm ci && echo "Waiting... \\($i/6\\)")'
    line = 'npm ci && echo "Waiting... ($i/6)"'
    result = check(line, allow=(saved,), mode=mode, sandboxed=sandboxed)
    assert allowed_by(result, saved), result
    assert not isinstance(check(line, mode=mode, sandboxed=sandboxed), PermissionAllow)


def test_the_escapes_read_back_what_they_wrote() -> None:
    for text in ["a(b)c", "a\\(b", "\\\\", "x\\*y", 'echo "$(date)"', ")("]:
        assert unescape(escape(text)) == text
    assert unescape("a\\*b") == "a\\*b"  # (a backslash before anything else is kept)


# ── a rule for a whole compound line ────────────────────────────────────────────────────

MAKE_LINE = "make -j4 && ctest --output-on-failure 2>&1"


@pytest.mark.parametrize("mode", ALLOWING_MODES)
@pytest.mark.parametrize("sandboxed", [False, True])
def test_a_rule_naming_a_compound_line_allows_exactly_that_line(
    mode: PermissionMode, sandboxed: bool
) -> None:
    rule = f"Bash({MAKE_LINE})"
    result = check(MAKE_LINE, allow=(rule,), mode=mode, sandboxed=sandboxed)
    assert allowed_by(result, rule), result
    for other in (f"{MAKE_LINE}; rm -rf build", "make -j4 && ctest", "make -j8 && ctest 2>&1"):
        assert not allowed_by(check(other, allow=(rule,), mode=mode), rule)


def test_plan_mode_still_runs_only_what_is_read_only() -> None:
    result = check(MAKE_LINE, allow=(f"Bash({MAKE_LINE})",), mode="plan")
    assert isinstance(result, PermissionDeny)


# ── an exact rule is the person's decision ──────────────────────────────────────────────


@pytest.mark.parametrize("mode", ALLOWING_MODES)
@pytest.mark.parametrize("sandboxed", [False, True])
def test_an_exact_rule_allows_a_line_that_cant_be_checked(
    mode: PermissionMode, sandboxed: bool
) -> None:
    for line in ("shopt -s dotglob", 'eval "$CMD"', "./build.sh --fast"):
        assert not isinstance(check(line, mode=mode, sandboxed=sandboxed), PermissionAllow)
        rule = f"Bash({escape(line)})"
        result = check(line, allow=(rule,), mode=mode, sandboxed=sandboxed)
        assert allowed_by(result, rule), (line, result)
    # a prefix rule keeps the checks for what follows its prefix
    result = check('eval "$CMD"', allow=("Bash(eval:*)",), mode=mode)
    assert not isinstance(result, PermissionAllow), result


@pytest.mark.parametrize("mode", ALLOWING_MODES)
@pytest.mark.parametrize("deny", [("Bash(git push *)",), ("Read(./secrets/**)",)])
def test_under_a_deny_an_exact_rule_allows_what_the_deny_can_still_be_held_against(
    mode: PermissionMode, deny: tuple[str, ...]
) -> None:
    # the parts of `eval "$CMD"` are known (eval of a variable): the rule decides
    rule = 'Bash(eval "$CMD")'
    assert allowed_by(check('eval "$CMD"', allow=(rule,), deny=deny, mode=mode), rule)
    # `shopt` is outside what the analysis follows: the line has no known parts to hold
    # against the deny rules, so the exact rule does not waive it (stricter than Claude Code)
    result = check("shopt -s dotglob", allow=("Bash(shopt -s dotglob)",), deny=deny, mode=mode)
    assert not isinstance(result, PermissionAllow), result


@pytest.mark.parametrize("mode", ALLOWING_MODES)
def test_a_deny_rule_beats_an_exact_rule_for_the_whole_line(mode: PermissionMode) -> None:
    line = "make -j4 && rm -rf build"
    result = check(line, allow=(f"Bash({line})",), deny=("Bash(rm:*)",), mode=mode)
    assert isinstance(result, PermissionDeny) and "Bash(rm:*)" in result.message


@pytest.mark.parametrize("mode", ALLOWING_MODES)
def test_a_protected_path_still_asks_under_an_exact_rule(mode: PermissionMode) -> None:
    line = "echo hook > .git/hooks/pre-commit"
    result = check(line, allow=(f"Bash({line})",), mode=mode)
    assert not isinstance(result, PermissionAllow)
    assert result.reason is not None and result.reason.detail == "write to a protected folder"


@pytest.mark.parametrize(
    "line",
    [
        'cd .git && echo x > "$TARGET"',  # a target only known when it runs
        "ln -s .git g && echo x > g/hooks/pre-commit",  # a link made earlier in the line
        "cp hook .gi*/hooks/",  # a glob a writer fills in
        "echo x > .git/hooks/pre-commit ((",  # a line that can't be split, naming .git
    ],
)
def test_an_exact_rule_does_not_reach_writes_the_protected_check_cant_see(line: str) -> None:
    rule = f"Bash({escape(line)})"
    for mode in ALLOWING_MODES:
        result = check(line, allow=(rule,), mode=mode)
        assert not isinstance(result, PermissionAllow), (mode, result)


def test_an_exact_rule_allows_a_target_known_only_when_it_runs() -> None:
    # (as bypassPermissions does: what can't be seen is the person's decision, and the
    # sandbox keeps the protected folders read-only)
    rule = 'Bash(echo x > "$TARGET")'
    assert allowed_by(check('echo x > "$TARGET"', allow=(rule,)), rule)
    rule = 'Bash(cd .git && echo x > "$TARGET")'
    result = check('cd .git && echo x > "$TARGET"', allow=(rule,), sandboxed=True)
    assert allowed_by(result, rule), result


def test_an_unparseable_line_needs_more_than_an_exact_rule_while_a_deny_is_in_force() -> None:
    line = "echo (("
    rule = f"Bash({escape(line)})"
    assert allowed_by(check(line, allow=(rule,)), rule)
    assert not isinstance(check(line, allow=(rule,), deny=("Bash(rm:*)",)), PermissionAllow)


def test_code_the_session_wrote_is_not_waived_by_an_exact_rule() -> None:
    rule = "Bash(python3 analysis.py)"
    deny = ("Bash(git push *)",)
    assert allowed_by(check("python3 analysis.py", allow=(rule,), deny=deny), rule)
    result = check("python3 analysis.py", allow=(rule,), deny=deny, written=("analysis.py",))
    assert not isinstance(result, PermissionAllow)
    assert "this session wrote" in str(getattr(result, "message", ""))


# ── "Always allow" offers a rule that means what ran ────────────────────────────────────


@pytest.mark.parametrize(
    ("line", "other"),
    [
        ('for i in 1 2; do echo "step $i"; done', 'for i in 1 3; do echo "step $i"; done'),
        ('for i in 1 2; do echo "step $i"; done', 'echo "step $i"'),
        ('for f in a b; do touch "($f).txt"; done', 'for f in a c; do touch "($f).txt"; done'),
        ('x=$(date) && echo "at $x" > log.txt', 'x=$(id) && echo "at $x" > log.txt'),
    ],
)
def test_always_allow_on_a_loop_offers_the_whole_line_and_it_allows_that_line(
    line: str, other: str
) -> None:
    asked = check(line)
    assert isinstance(asked, PermissionAsk), asked
    assert asked.suggested_rules == (f"Bash({escape(line)})",), asked.suggested_rules
    rule = asked.suggested_rules[0]
    for mode in ALLOWING_MODES:
        assert allowed_by(check(line, allow=(rule,), mode=mode), rule)
    assert not allowed_by(check(other, allow=(rule,)), rule)


def test_a_plain_compound_line_still_offers_one_rule_per_command() -> None:
    asked = check("make -j4 && ctest --output-on-failure")
    assert isinstance(asked, PermissionAsk)
    assert asked.suggested_rules == ("Bash(make -j4)", "Bash(ctest --output-on-failure)")


# ── a URL is not a path; valid bash the grammar could not read ──────────────────────────

RAW = "https://raw.githubusercontent.com/x/y/main/.claude/skills/a/SKILL.md"


@pytest.mark.parametrize("mode", ALLOWING_MODES)
def test_text_inside_a_url_is_not_a_path(mode: PermissionMode) -> None:
    for line in (f'curl -sL "{RAW}"', f"wget -q {RAW}", f"git clone {RAW} clone"):
        result = check(line, allow=("Bash(curl:*)", "Bash(wget:*)", "Bash(git clone:*)"), mode=mode)
        assert isinstance(result, PermissionAllow), (line, result)


@pytest.mark.parametrize(
    "line",
    [
        f"touch {RAW}",  # touch makes the relative path https:/raw.../.claude/...
        f"cp x {RAW}",
        f"wget -x {RAW}",  # -x builds the local path from the URL's
        "wget -nH --cut-dirs=1 https://h/a/.git/hooks/pre-commit",
        "curl -o .git/hooks/pre-commit https://h/x",
    ],
)
def test_a_url_shaped_word_is_still_a_path_where_it_names_a_local_file(line: str) -> None:
    allow = ("Bash(touch:*)", "Bash(cp:*)", "Bash(wget:*)", "Bash(curl:*)")
    result = check(line, allow=allow, mode="bypassPermissions")
    assert isinstance(result, PermissionAsk), (line, result)
    assert result.reason is not None and result.reason.detail == "write to a protected folder"


@pytest.mark.parametrize("mode", ALLOWING_MODES)
def test_a_url_given_to_a_program_of_the_projects_own_is_an_address(mode: PermissionMode) -> None:
    """Found by the differential test's bash grammar: Claude Code allows this under
    `Bash(./fetch-skill:*)`; a program we know nothing of reads a URL as an address too."""
    for line in (f'./fetch-skill -sL "{RAW}"', f"httpie GET {RAW}", f"dvc import-url {RAW} data/"):
        program = line.split()[0]
        result = check(line, allow=(f"Bash({program}:*)",), mode=mode)
        assert isinstance(result, PermissionAllow) or "may have changed" in str(result.reason), (
            line,
            result,
        )


def test_a_url_is_a_path_again_where_its_scheme_names_a_link(tmp_path: Path) -> None:
    """A folder (planted or cloned) named ``https:`` that links back into the project makes
    ``https://h/.git/hooks/pre-commit`` the project's own hook for any program."""
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "https:").symlink_to(project)
    (project / "h").symlink_to(project)
    tool = TOOLS["Bash"]
    resolver = OsResolver(home=str(tmp_path))
    rules = compile_rules(
        {"projectSettings": {"allow": ("Bash(sometool:*)",)}}, cwd=str(project), home=str(tmp_path)
    )
    for line, expected in (
        ("sometool https://h/.git/hooks/pre-commit", PermissionAsk),
        ("sometool https://example.org/.git/hooks/pre-commit", PermissionAsk),
    ):
        result = decide(
            tool=tool,
            input=tool.input_model.model_validate({"command": line}),
            rules=rules,
            mode="bypassPermissions",
            cwd=str(project),
            resolver=resolver,
        )
        assert isinstance(result, expected), (line, result)
    (project / "https:").unlink()
    (project / "https:").mkdir()  # a plain folder: the URL names nothing of the project
    result = decide(
        tool=tool,
        input=tool.input_model.model_validate({"command": "sometool https://h/.git/hooks/x"}),
        rules=rules,
        mode="dontAsk",
        cwd=str(project),
        resolver=resolver,
    )
    assert isinstance(result, PermissionAllow), result


@pytest.mark.parametrize("mode", ALLOWING_MODES)
def test_quoted_text_with_shell_syntax_is_an_argument(mode: PermissionMode) -> None:
    """Found by the differential test's bash grammar (Claude Code allows ``zq 'm"5;'`` under
    ``Bash(zq:*)``): a quoted word is one argument, whatever it holds; bash reads its quotes
    as the grammar does (the shell corpus and the generator check that against bash)."""
    line = """git commit -m "don't break; use a | b" """
    assert isinstance(check(line, allow=("Bash(git commit:*)",), mode=mode), PermissionAllow)
    denied = check(
        'git commit -m "x"; rm -rf y', allow=("Bash(git commit:*)",), deny=("Bash(rm:*)",)
    )
    assert isinstance(denied, PermissionDeny), denied


def test_escaped_quotes_around_separators_stay_one_argument_in_bash(tmp_path: Path) -> None:
    """A line once kept in the adversarial corpus as "escaped quotes hiding separators":
    bash runs it as one `echo`, so `Bash(echo:*)` allows it, and nothing is removed."""
    line = 'echo "\\"; rm -rf x; echo \\""'
    (tmp_path / "x").mkdir()
    ran = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True)
    assert ran.stdout == '"; rm -rf x; echo "\n' and (tmp_path / "x").is_dir()
    result = check(line, allow=("Bash(echo:*)",), deny=("Bash(rm:*)",))
    assert isinstance(result, PermissionAllow), result


@pytest.mark.parametrize(
    "line",
    ['zqb "$(zqc -q)"', "zqb $TARGET", "find . -name '*.tmp' | xargs zqb", 'zqb "a[$(id)]"'],
)
def test_an_ask_an_exact_rule_would_allow_offers_that_rule(line: str) -> None:
    """While deny rules are in force, a prefix rule can't vouch for a file only known when
    the command runs; the ask says which exact rule would, and "Always allow" saves it."""
    allow, deny = ("Bash(zqb:*)", "Bash(zqc:*)", "Bash(find:*)"), ("Bash(rm:*)",)
    asked = check(line, allow=allow, deny=deny)
    assert isinstance(asked, PermissionAsk) and len(asked.suggested_rules) == 1, asked
    assert f"allow this exact line with {asked.suggested_rules[0]}" in asked.message
    assert isinstance(
        check(line, allow=(*allow, *asked.suggested_rules), deny=deny), PermissionAllow
    )
    refused = check(line, allow=allow, deny=deny, mode="dontAsk")
    assert isinstance(refused, PermissionDeny) and asked.suggested_rules[0] in refused.message


def test_in_the_sandbox_a_file_known_when_the_command_runs_is_fenced() -> None:
    """The sandbox hides Read-denied files and keeps Edit-denied and protected ones
    read-only, so a file named at run time can't be one of them; only a denied program that
    an unknown program might run from its operands still asks."""
    allow = ("Bash(zqb:*)", "Bash(zqc:*)", "Bash(cat:*)")
    paths_only = ("Read(./secrets/**)", "Edit(./protected/**)")
    for line in ('zqb "$(zqc -q)"', "zqb $TARGET", 'cat "$(zqc -q)"', "zqb -o $OUT"):
        fenced = check(line, allow=allow, deny=paths_only, sandboxed=True, mode="dontAsk")
        assert isinstance(fenced, PermissionAllow), (line, fenced)
        unfenced = check(line, allow=allow, deny=paths_only, sandboxed=False, mode="dontAsk")
        assert isinstance(unfenced, PermissionDeny), (line, unfenced)
    with_program = (*paths_only, "Bash(rm:*)")
    asked = check("zqb $TARGET", allow=allow, deny=with_program, sandboxed=True)
    assert isinstance(asked, PermissionAsk), asked  # (zqb may run `rm` from $TARGET)
    read = check('cat "$(zqc -q)"', allow=allow, deny=with_program, sandboxed=True)
    assert isinstance(read, PermissionAllow), read  # (cat runs none of its operands)


def test_no_exact_rule_is_offered_where_none_would_allow() -> None:
    asked = check("python3 analysis.py", allow=("Bash(python3:*)",), deny=("Bash(rm:*)",),
                  written=("analysis.py",))  # fmt: skip
    assert isinstance(asked, PermissionAsk) and asked.suggested_rules == (), asked
    assert "allow this exact line" not in asked.message


# ── shapes found among the exact rules of public settings files ─────────────────────────

COMMIT = (
    "git commit -m \"$(cat <<'EOF'\nIgnore build output in .gitignore\n\nAnd say why.\nEOF\n)\""
)


@pytest.mark.parametrize(
    "line",
    [
        'cp "/Users/me/.claude/projects/p/session.bin" /tmp/session.gz',  # reads .claude/
        "rsync -av --exclude='.claude' --exclude=.git src/ deploy/",  # patterns, not paths
        COMMIT,  # `.gitignore` is not `.git`; the message is text, not a file
    ],
)
@pytest.mark.parametrize("deny", [(), ("Bash(rm:*)", "Read(./secrets/**)")])
def test_what_a_line_only_reads_or_mentions_is_not_written(
    line: str, deny: tuple[str, ...]
) -> None:
    result = check(line, allow=(f"Bash({escape(line)})",), deny=deny)
    assert isinstance(result, PermissionAllow), result
    if line == COMMIT:  # Claude Code's own commit shape, under a prefix rule
        assert isinstance(check(line, allow=("Bash(git commit:*)",), deny=deny), PermissionAllow)


@pytest.mark.parametrize(
    "line",
    [
        "cp x .git/hooks/pre-commit",
        "cp -t .git/hooks x",
        "cp -l .git/hooks/pre-commit h",  # a hard link: a later write through h changes it
        "rsync --remove-source-files .git/config /tmp/x",
        "install -m 755 hook .git/hooks/pre-commit",
    ],
)
def test_a_copy_into_or_out_of_a_protected_folder_still_asks(line: str) -> None:
    result = check(line, allow=(f"Bash({escape(line)})",), mode="bypassPermissions")
    assert isinstance(result, PermissionAsk), (line, result)


def test_a_rule_set_aside_for_an_unseen_write_says_so() -> None:
    """An exact rule is set aside outside the sandbox when the line names a protected
    folder and writes where the check can't see; the ask says that, not "no rule"."""
    line = 'somewrapper -Command "Write-Output $env:USERPROFILE/.claude" > "$OUT"'
    rule = f"Bash({escape(line)})"
    asked = check(line, allow=(rule,))
    assert isinstance(asked, PermissionAsk), asked
    assert f"the rule {rule}" in asked.message and "no allow rule" not in asked.message
    assert asked.suggested_rules == ()
    assert isinstance(check(line, allow=(rule,), sandboxed=True), PermissionAllow)


def test_an_empty_backquote_substitution_parses() -> None:
    result = check('grep -rn "``" "D:/client/x/"')
    assert isinstance(result, PermissionAllow), result  # read-only, inside the project
    denied = check('echo "``"; rm -rf x', deny=("Bash(rm:*)",))
    assert isinstance(denied, PermissionDeny)


# ── rules for tools we don't have, Tool(*), Skill(name), WebFetch(domain:*) ────────────

CLAUDE_RULES = [
    "PowerShell(Get-ChildItem -Path \\(Resolve-Path .\\))",
    "PowerShell(dotnet build:*)",
    "Skill(review)",
    "Grep(*)",
    "Task(*)",
    "WebFetch(domain:*)",
    'Bash(echo "Waiting... \\($i/6\\)")',
]


def test_a_claude_code_settings_file_loads_whole(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    (project / ".toolhost").mkdir(parents=True)
    home.mkdir()
    text = json.dumps({"permissions": {"allow": CLAUDE_RULES}}, indent=2)
    (project / ".toolhost" / "settings.json").write_text(text)
    settings = load_settings(cwd=project, home=home)
    assert settings.problems == []
    assert settings.rules["projectSettings"]["allow"] == tuple(CLAUDE_RULES)


def test_rules_for_tools_that_are_not_here_are_shown_inactive() -> None:
    tools = {name: tool.rule_content is not None for name, tool in TOOLS.items()}
    notes = {rule: inactive_reason(rule, tools) for rule in CLAUDE_RULES}
    assert notes[CLAUDE_RULES[0]] == "inactive: there is no PowerShell tool here"
    assert notes["Task(*)"] == "inactive: there is no Task tool here"
    assert notes["Skill(review)"] is None and notes["Grep(*)"] is None
    assert notes["WebFetch(domain:*)"] is None
    assert inactive_reason("Grep(pattern)", tools) == (
        "inactive: Grep calls have nothing a specifier can name"
    )


@pytest.mark.parametrize("mode", [*ALLOWING_MODES, "plan", "bypassPermissions"])
def test_skill_rules_name_the_skill(mode: PermissionMode) -> None:
    review, other = {"skill": "review"}, {"skill": "deploy"}
    assert isinstance(
        check(review, deny=("Skill(review)",), mode=mode, tool="Skill"), PermissionDeny
    )
    assert isinstance(
        check(review, deny=("Skill(Review)",), mode=mode, tool="Skill"), PermissionDeny
    )
    assert isinstance(
        check(other, deny=("Skill(review)",), mode=mode, tool="Skill"), PermissionAllow
    )
    assert isinstance(
        check(other, deny=("Skill(dep:*)",), mode=mode, tool="Skill"), PermissionAllow
    )
    assert isinstance(
        check(other, deny=("Skill(deploy:*)",), mode=mode, tool="Skill"), PermissionDeny
    )


@pytest.mark.parametrize("mode", ["default", "dontAsk"])
def test_whole_tool_star_rules(mode: PermissionMode) -> None:
    fetch = {"url": "https://example.org/a", "prompt": "summarise"}
    assert not isinstance(check(fetch, mode=mode, tool="WebFetch"), PermissionAllow)
    result = check(fetch, allow=("WebFetch(domain:*)",), mode=mode, tool="WebFetch")
    assert allowed_by(result, "WebFetch(domain:*)"), result
    denied = check(
        fetch,
        allow=("WebFetch(domain:*)",),
        deny=("WebFetch(domain:example.org)",),
        mode=mode,
        tool="WebFetch",
    )
    assert isinstance(denied, PermissionDeny)
    assert isinstance(
        check({"pattern": "x"}, deny=("Grep(*)",), mode=mode, tool="Grep"), PermissionDeny
    )


# ── reasons that say what to do ─────────────────────────────────────────────────────────


def test_an_ask_names_the_rule_to_add_and_its_settings_file() -> None:
    asked = check("./gradlew build --help", allow=("Bash(./gradlew build:*)",))
    assert isinstance(asked, PermissionAsk)
    assert "the rule Bash(./gradlew build:*)" in asked.message
    assert "a rule naming the exact command" in asked.message
    assert "add Bash(./gradlew build --help) to permissions.allow in .toolhost/settings.json" in (
        asked.message
    )
    denied = check("./gradlew build --help", allow=("Bash(./gradlew build:*)",), mode="dontAsk")
    assert isinstance(denied, PermissionDeny) and "Bash(./gradlew build --help)" in denied.message
    mvnw = check("./mvnw package")
    assert isinstance(mvnw, PermissionAsk)
    assert "outside the system folders" not in mvnw.message
    assert "add Bash(./mvnw package) to permissions.allow in .toolhost/settings.json" in (
        mvnw.message
    )


def test_a_rule_offered_for_a_command_with_parentheses_reads_back_as_that_command() -> None:
    asked = check("touch 'report (final).txt'")
    assert isinstance(asked, PermissionAsk)
    rule = asked.suggested_rules[0]
    assert rule == "Bash(touch 'report \\(final\\).txt')"
    assert allowed_by(check("touch 'report (final).txt'", allow=(rule,)), rule)


# ── code this session wrote, by what would run ──────────────────────────────────────────


@pytest.mark.parametrize("sandboxed", [False, True])
def test_version_and_help_run_nothing_and_a_plain_file_is_not_code(sandboxed: bool) -> None:
    allow, deny = ("Bash(* --version)", "Bash(python3:*)"), ("Bash(git push *)",)
    written = ("allowed", "x1")  # (`touch allowed x1`)
    for line in ("python3 --version", "python3 -m json.tool data.json"):
        result = check(
            line, allow=allow, deny=deny, mode="dontAsk", written=written, sandboxed=sandboxed
        )
        assert isinstance(result, PermissionAllow), (line, result)
    result = check(
        "python3 --version", allow=allow, deny=deny, mode="dontAsk", written=("helper.py",)
    )
    assert isinstance(result, PermissionAllow), result


@pytest.mark.parametrize(
    ("line", "written", "runs"),
    [
        ("python3 analysis.py", ("analysis.py",), True),
        ("python3 analysis.py", ("json.py",), True),  # imported from beside the script
        ("python3 analysis.py", ("notes.md", "allowed"), False),
        ("python3 -m tool", ("helper.py",), True),
        ("python3 -m tool", ("run.js",), False),  # not code for Python
        ("node app.js", ("lib.js",), True),
        ("node app.js", ("lib.py",), False),
        ("make", ("Makefile",), True),
        ("make report", ("gen.py",), True),  # a recipe may run it
        ("make", ("notes.md", "allowed"), False),
        ("make --version", ("Makefile",), False),
        ("npm run build", ("package.json",), True),
        ("npm run build", ("notes.md",), False),
        ("pytest -q", ("test_x.py",), True),
        ("pytest --version", ("conftest.py",), True),  # pytest loads conftest.py first
        ("pytest -q", ("data.csv",), False),
        ("python3 analysis.py", ("vendor/",), True),  # a folder a copy filled
    ],
)
def test_code_the_session_wrote_counts_by_what_the_program_runs(
    line: str, written: tuple[str, ...], runs: bool
) -> None:
    allow = ("Bash(python3:*)", "Bash(node:*)", "Bash(make:*)", "Bash(npm run:*)", "Bash(pytest:*)")
    result = check(line, allow=allow, deny=("Bash(git push *)",), mode="dontAsk", written=written)
    if runs:
        assert isinstance(result, PermissionDeny) and "this session wrote" in result.message
    else:
        assert isinstance(result, PermissionAllow), result


# ── hypothesis over the rule grammar ────────────────────────────────────────────────────

_WORDS = st.sampled_from(
    ["make", "-j4", "ctest", "echo", '"($i/6)"', "'a b'", "x\\(y\\)", "\\\\", "2>&1", "$HOME",
     '"$(date)"', "build", "--help", "(x)", "a:b", "'*'", "out.txt"]
)  # fmt: skip
_PROGRAMS = st.sampled_from(["make", "ctest", "sleep", "npm", "cargo", "./run.sh", "shopt"])
_COMMANDS = st.builds(lambda p, ws: " ".join([p, *ws]), _PROGRAMS, st.lists(_WORDS, max_size=3))
_LINES = st.builds(
    lambda first, rest: first + "".join(op + c for op, c in rest),
    _COMMANDS,
    st.lists(st.tuples(st.sampled_from([" && ", "; ", " | ", " || "]), _COMMANDS), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(line=_LINES, other=_LINES, mode=st.sampled_from(ALLOWING_MODES))
@example(line="make", other="make && make", mode="default")
@example(line="make", other="make && sleep", mode="default")
def test_an_exact_rule_allows_its_line_and_nothing_that_differs(
    line: str, other: str, mode: PermissionMode
) -> None:
    rule = f"Bash({escape(line)})"
    assert parse_rule(rule).specifier == line
    assert allowed_by(check(line, allow=(rule,), mode=mode), rule)
    parts = re.split(r" && |; | \| | \|\| ", other)
    if other.strip() == line.strip():
        return
    if all(
        part.strip() == line.strip() or isinstance(check(part, mode=mode), PermissionAllow)
        for part in parts
    ):
        # `make && make` or `make && sleep` under `Bash(make)`: each command is the allowed
        # line or allowed with no rule (read-only), and Claude Code allows a compound line
        # when every command of it is allowed.
        return
    assert not allowed_by(check(other, allow=(rule,), mode=mode), rule)


@settings(max_examples=100, deadline=None)
@given(line=_LINES, mode=st.sampled_from(ALLOWING_MODES))
def test_a_deny_holds_inside_a_line_allowed_exactly(line: str, mode: PermissionMode) -> None:
    whole = f"{line} && rm -rf build"
    result = check(whole, allow=(f"Bash({escape(whole)})",), deny=("Bash(rm:*)",), mode=mode)
    assert not isinstance(result, PermissionAllow), result
    if analyze(whole).error is None:  # (a line the analysis can't follow asks instead)
        assert isinstance(result, PermissionDeny), result
