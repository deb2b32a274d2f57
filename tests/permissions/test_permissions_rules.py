"""Rule syntax, shell analysis and matching, path patterns — the parts `decide()` is built of."""

from __future__ import annotations

import pytest
from test_permissions_tools import EDIT, GREP, MCP, READ, SHELL, TERMINAL, WEB, run_decide

from jupyter_toolhost.permissions import RuleError, analyze, parse_rule
from jupyter_toolhost.permissions.paths import PathRuleSet, compile_pattern
from jupyter_toolhost.permissions.rules.shell_rules import ShellRuleSet, compile_shell_pattern

# ── rule syntax ──────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("text", "kind", "tool", "specifier", "server"),
    [
        ("Bash", "shell", "Bash", None, None),
        ("Bash(npm run test:*)", "shell", "Bash", "npm run test:*", None),
        ("Bash(*)", "shell", "Bash", None, None),
        ("Read(./src/**)", "read", "Read", "./src/**", None),
        ("Write(//tmp/x)", "edit", "Write", "//tmp/x", None),
        ("WebFetch(domain:Example.COM)", "web", "WebFetch", "example.com", None),
        ("mcp__github", "mcp_server", "mcp__github", None, "github"),
        ("mcp__github__*", "mcp_server", "mcp__github", None, "github"),
        ("mcp__github__create_issue", "tool", "mcp__github__create_issue", None, None),
        ("deploy", "tool", "deploy", None, None),
        ("Bash(echo (hi))", "shell", "Bash", "echo (hi)", None),
        # Claude Code's escaping in saved rules: \( and \) are parentheses, \\ a backslash
        ('Bash(echo "Waiting... \\($i/6\\)")', "shell", "Bash", 'echo "Waiting... ($i/6)"', None),
        ("Bash(printf a\\\\b)", "shell", "Bash", "printf a\\b", None),
        ("Bash(echo \\*)", "shell", "Bash", "echo \\*", None),
        # Tool(*) is the whole tool, as in Claude Code; WebFetch(domain:*) any host
        ("Grep(*)", "tool", "Grep", None, None),
        ("Task(*)", "tool", "Task", None, None),
        ("Read(*)", "read", "Read", None, None),
        ("WebFetch(domain:*)", "web", "WebFetch", None, None),
        # other tools' specifiers are kept: Skill matches them, PowerShell is inactive here
        ("Skill(review)", "tool", "Skill", "review", None),
        ("deploy(prod)", "tool", "deploy", "prod", None),
        (
            "PowerShell(Get-ChildItem -Path \\(x\\))",
            "tool",
            "PowerShell",
            "Get-ChildItem -Path (x)",
            None,
        ),
    ],
)
def test_rule_shapes(text: str, kind: str, tool: str, specifier: str | None, server: str | None):
    rule = parse_rule(text)
    assert (rule.kind, rule.tool, rule.specifier, rule.server) == (kind, tool, specifier, server)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty rule"),
        ("Bash(ls", "missing ')'"),
        ("Bash()", "empty parentheses"),
        ("WebFetch(example.com)", "domain:host"),
        ("WebFetch(domain:exa mple.com)", "not a host name"),
        ("mcp__", "MCP rules are"),
        ("mcp__github__cre*", "'*' is only understood"),
        ("Bad Name", "a tool name is"),
    ],
)
def test_unknown_rule_shapes_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(RuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_rule(text)


# ── shell analysis ───────────────────────────────────────────────────────────────────


def _texts(command: str) -> list[str]:
    analysis = analyze(command)
    assert analysis.error is None, analysis.error
    return [c.text for c in analysis.commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("a && b || c ; d | e |& f & g", ["a", "b", "c", "d", "e", "f", "g"]),
        ("a\nb", ["a", "b"]),
        ("echo $(date) `whoami`", ["date", "whoami", "echo '$(date)' '`whoami`'"]),
        ("diff <(ls a) >(cat)", ["ls a", "cat", "diff '<(ls a)' '>(cat)'"]),
        ("FOO=1 BAR='x y' make test", ["make test"]),
        ("timeout -k 5 30 nice -n 2 nohup stdbuf -oL make", ["make"]),
        ("time -p xargs -0 -n 1 grep x", ["grep x"]),
        ("echo 'a && b' \"c; d\"", ["echo 'a && b' 'c; d'"]),
        ("cat <<'EOF'\nrm -rf /\nEOF\nls", ["cat", "ls"]),
        ("ls # ; rm -rf /", ["ls"]),
    ],
)
def test_commands_are_split_and_wrappers_stripped(command: str, expected: list[str]) -> None:
    assert _texts(command) == expected


def test_redirections_are_found_and_harmless_ones_skipped() -> None:
    (command,) = analyze("make 2>&1 >out.log 2>>/dev/null &>all.txt <in.txt").commands
    targets = [(r.op, r.target.value) for r in command.file_redirects()]
    assert targets == [(">", "out.log"), ("&>", "all.txt"), ("<", "in.txt")]


@pytest.mark.parametrize(
    "command",
    ["echo 'open", 'echo "open', "echo $(ls", "echo `ls", "(ls", "ls)", "cat <<EOF\nno end"],
)
def test_unparseable_commands_carry_an_error(command: str) -> None:
    analysis = analyze(command)
    assert analysis.error is not None and analysis.commands == ()
    assert run_decide(SHELL, {"command": command}).behavior == "ask"
    assert run_decide(SHELL, {"command": command}, mode="bypassPermissions").behavior == "ask"


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("sh -c 'ls'", "runs_code"),
        ("eval ls", "runs_code"),
        ("find . -exec cat {} +", "runs_code"),
        ("find . -delete", "runs_code"),
        ("python3 -c 'print(1)'", "runs_code"),
        ("$TOOL run", "opaque"),
        ("timeout --bogus 1 ls", "opaque"),
        ("PATH=. ls", "env_hazard"),
        ("ls \u200b-la", "suspicious"),
    ],
)
def test_risky_commands_are_marked(command: str, flag: str) -> None:
    first = analyze(command).commands[-1] if flag == "runs_code" else analyze(command).commands[0]
    risky = [c for c in analyze(command).commands if getattr(c, flag)]
    assert risky and risky[0].risky, first


# ── shell rule matching ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("spec", "command", "matches"),
    [
        ("npm run test:*", "npm run test", True),
        ("npm run test:*", "npm run test --watch", True),
        ("npm run test:*", "npm run testing", False),
        ("ls *", "ls -la", True),
        ("ls *", "ls", True),
        ("ls *", "lsof", False),
        ("ls*", "lsof", True),
        ("git * main", "git push origin main", True),
        ("git * main", "git push origin main2", False),
        ("git status", "git status", True),
        ("git status", "git status -s", False),
        ("git commit -m 'a b'", 'git commit -m "a b"', True),
    ],
)
def test_shell_patterns(spec: str, command: str, matches: bool) -> None:
    rules = ShellRuleSet([(spec, compile_shell_pattern(spec))], folded=False)
    (parsed,) = analyze(command).commands
    assert (rules.match((parsed.text,)) == spec) is matches


def test_every_sub_command_must_be_allowed() -> None:
    rules = {"session": {"allow": ["Bash(npm run test:*)", "Bash(git status)"]}}
    both = run_decide(SHELL, {"command": "git status && npm run test"}, rules=rules)
    one = run_decide(SHELL, {"command": "git status && npm publish"}, rules=rules)
    assert both.behavior == "allow"
    assert one.behavior == "ask" and one.suggested_rules == ("Bash(npm publish)",)


def test_an_exact_rule_may_allow_a_risky_command_but_a_prefix_rule_may_not() -> None:
    prefix = {"session": {"allow": ["Bash(find:*)", "Bash(rm:*)"]}}
    exact = {"session": {"allow": ["Bash(find . -name '*.pyc' -delete)"]}}
    command = {"command": "find . -name '*.pyc' -delete"}
    assert run_decide(SHELL, command, rules=prefix).behavior == "ask"
    assert run_decide(SHELL, command, rules=exact).behavior == "allow"


def test_bash_rules_apply_to_every_tool_with_a_shell_command() -> None:
    rules = {"session": {"deny": ["Bash(rm:*)"], "allow": ["Bash(make:*)"]}}
    assert run_decide(TERMINAL, {"command": "rm x"}, rules=rules).behavior == "deny"
    assert run_decide(TERMINAL, {"command": "make all"}, rules=rules).behavior == "allow"


# ── path patterns ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("spec", "path", "matches"),
    [
        ("//data/allowed/**", "/data/allowed/x/y", True),
        ("//data/allowed/**", "/data/allowed", True),
        ("//data/allowed", "/data/allowed_evil", False),
        ("//data/allowed/**", "/data/allowed_evil/x", False),
        ("~/.ssh/**", "/home/user/.ssh/id_rsa", True),
        ("/src/*.py", "/settings-root/src/a.py", True),
        ("/src/*.py", "/settings-root/src/sub/a.py", False),
        ("/src/**/*.py", "/settings-root/src/sub/deep/a.py", True),
        ("./build", "/cwd/build/out.o", True),
        ("*.env", "/cwd/a/b/prod.env", True),
        ("*.env", "/elsewhere/prod.env", False),
        ("src/../secrets", "/cwd/secrets/k", True),
        ("./secrets/**", "/cwd/secrets", True),
        ("./secrets/**", "/cwd/sub/secrets/k", False),
        ("file[0-9].txt", "/cwd/file7.txt", True),
    ],
)
def test_path_patterns(spec: str, path: str, matches: bool) -> None:
    pattern = compile_pattern(spec, cwd="/cwd", home="/home/user", settings_root="/settings-root")
    rules = PathRuleSet([(spec, pattern)], folded=False)
    assert (rules.match((path,)) == spec) is matches


def test_read_rules_apply_to_every_tool_that_reads_and_edit_rules_to_every_writer() -> None:
    rules = {"session": {"deny": ["Read(./private/**)", "Edit(./locked/**)"]}}
    assert run_decide(GREP, {"pattern": "x", "path": "private"}, rules=rules).behavior == "deny"
    assert run_decide(READ, {"file_path": "locked/a"}, rules=rules).behavior == "allow"
    assert run_decide(EDIT, {"file_path": "locked/a"}, rules=rules).behavior == "deny"


def test_web_and_mcp_rules() -> None:
    rules = {
        "session": {
            "allow": ["WebFetch(domain:docs.python.org)", "mcp__github"],
            "deny": ["WebFetch(domain:evil.example)"],
        }
    }
    allowed = run_decide(WEB, {"url": "https://docs.python.org/3/"}, rules=rules)
    sub = run_decide(WEB, {"url": "https://www.docs.python.org/3/"}, rules=rules)
    denied = run_decide(WEB, {"url": "https://a.evil.example/"}, rules=rules)
    mcp = run_decide(MCP, {"value": "x"}, rules=rules)
    assert (allowed.behavior, sub.behavior, denied.behavior) == ("allow", "ask", "deny")
    assert mcp.behavior == "allow" and mcp.reason is not None
    assert mcp.reason.detail == "allow rule mcp__github"
