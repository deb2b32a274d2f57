"""The Bash sandbox as a boundary: no network, no connection files, git's and Claude Code's
configuration read-only, no kernel secrets in the environment, settings read once, rules
anchored at the project root. Real bubblewrap, a real loopback HTTP server, real git.

Under ``CI=true`` a missing bwrap fails these tests (the `bwrap` fixture) instead of skipping.
"""

from __future__ import annotations

import http.server
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_http import serve
from test_bash_sandbox import SECRET, bwrap, home, make_context, make_tree, run, text

from jupyter_toolhost.core.context import AppState, AppStateStore, ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.types import ToolPermissionContext
from jupyter_toolhost.tools import bash, builtin_tools
from jupyter_toolhost.tools.bash import sandbox

__all__ = ["bwrap", "home"]  # fixtures, used by name


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"LOOPBACK-ANSWER"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def loopback() -> Iterator[int]:
    with serve(_Handler) as port:
        yield port


def _fetch(port: int) -> str:
    return (
        'python3 -c "import urllib.request as u; '
        f"print(u.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode())\""
    )


async def test_no_network_by_default(
    bwrap: None, home: Path, tmp_path: Path, loopback: int
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    result = await run(make_context(work), _fetch(loopback))
    assert result.is_error and "LOOPBACK-ANSWER" not in text(result)
    assert "Connection refused" in text(result)  # its own loopback, nothing listening


async def test_network_setting_opens_it(
    bwrap: None, home: Path, tmp_path: Path, loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    opened = await run(make_context(work, network=True), _fetch(loopback))
    assert text(opened) == "LOOPBACK-ANSWER"
    monkeypatch.setenv(sandbox.NETWORK_ENV, "1")
    assert text(await run(make_context(work), _fetch(loopback))) == "LOOPBACK-ANSWER"
    # the secrets stay hidden with the network open
    assert SECRET not in text(await run(make_context(work), "cat secrets/key.txt"))


async def test_connection_files_are_hidden(
    bwrap: None, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "kernel-abc.json").write_text('{"key": "KERNEL-HMAC-KEY"}')
    elsewhere = tmp_path / "server" / "runtime" / "kernel-own.json"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text('{"key": "OWN-HMAC-KEY"}')
    (elsewhere.parent / "kernel-other.json").write_text('{"key": "OTHER-HMAC-KEY"}')
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    context = make_context(work, hidden_paths=(str(elsewhere),))
    result = await run(
        context, f"ls -A {runtime}; cat {runtime}/*.json {elsewhere.parent}/*.json; true"
    )
    assert "KERNEL-HMAC-KEY" not in text(result) and "OWN-HMAC-KEY" not in text(result)
    assert "OTHER-HMAC-KEY" not in text(result)
    assert "kernel-abc" not in text(result)
    assert (runtime / "kernel-abc.json").exists()


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout.strip()


GIT_ATTACKS = [
    "git config core.fsmonitor 'touch /tmp/x'",
    "echo '[core]' >> .git/config",
    "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    "mv .git/hooks .git/h2 && mkdir .git/hooks",
    "rm -rf .git/hooks",
    "echo '* filter=x' > .git/info/attributes",
    "git config --global core.pager 'touch pwned'",
    'echo "[core]" >> "$HOME/.gitconfig"',
    "mkdir -p .claude && echo '{}' > .claude/settings.local.json",
    'echo "{}" > "$HOME/.claude/settings.json"',
]


@pytest.mark.parametrize("command", GIT_ATTACKS)
async def test_git_and_claude_configuration_is_read_only(
    bwrap: None, home: Path, tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    _git(work, "init", "-q")
    (work / ".claude").mkdir()
    (home / ".claude").mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = t\n")
    before = {
        p: p.read_bytes() if p.is_file() else sorted(x.name for x in p.iterdir())
        for p in (work / ".git" / "config", work / ".git" / "hooks", home / ".gitconfig")
    }
    result = await run(make_context(work), command)
    assert result.is_error, text(result)
    for path, was in before.items():
        now = path.read_bytes() if path.is_file() else sorted(x.name for x in path.iterdir())
        assert now == was
    assert not (work / ".git" / "info" / "attributes").exists()
    assert not (work / ".claude" / "settings.local.json").exists()
    assert not (home / ".claude" / "settings.json").exists()


async def test_git_still_commits_in_the_sandbox(bwrap: None, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_tree(work)
    _git(work, "init", "-q")
    result = await run(
        make_context(work),
        "git add src && git -c user.name=t -c user.email=t@example.invalid commit -qm one "
        "&& git log --format=%s",
    )
    assert text(result) == "one", text(result)


async def test_kernel_secrets_are_not_in_the_environment(
    bwrap: None, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-KEEP-OUT")
    monkeypatch.setenv("JPY_SESSION_NAME", "/notebooks/JPY-KEEP-OUT.ipynb")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "HUB-KEEP-OUT")
    monkeypatch.setenv("MY_OWN_SETTING", "kept")
    for context in (make_context(work), make_context(work, enabled=False)):
        shown = text(await run(context, "env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'"))
        assert "KEEP-OUT" not in shown
        assert "MY_OWN_SETTING=kept" in shown


async def test_settings_are_read_once(
    bwrap: None, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    make_tree(work)
    context = make_context(work)
    sandbox.freeze(context)  # as a Session does when it starts
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "0")
    monkeypatch.setenv(sandbox.NETWORK_ENV, "1")
    assert bash.TOOL.runs_sandboxed(context)
    assert SECRET not in text(await run(context, "cat secrets/key.txt; true"))
    assert sandbox.plan(context, work).prefix.count("--unshare-net") == 1


async def test_rules_stay_anchored_when_the_shell_moves(
    bwrap: None, home: Path, tmp_path: Path
) -> None:
    """A relative rule means the project's path for the whole session: a context whose
    working directory moved (a worktree) still hides the project's secrets."""
    work = tmp_path / "work"
    make_tree(work)
    moved = work / "src"
    permission = ToolPermissionContext(mode="dontAsk", rules={"session": {"deny": (
        "Read(./secrets/**)", "Edit(./protected/**)")}})  # fmt: skip
    context = ToolUseContext(
        options=ToolUseOptions(tools=builtin_tools()),
        app_state=AppStateStore(AppState(tool_permission_context=permission)),
        cwd=moved,
        project_root=work,
    )
    assert SECRET not in text(await run(context, "cat ../secrets/key.txt; true"))
    wrote = await run(context, "echo x > ../protected/a")
    assert wrote.is_error and (work / "protected" / "a").read_text() == "original\n"
    read = await run(context, "cat ../secrets/key.txt", engine=True)
    assert SECRET not in text(read)
