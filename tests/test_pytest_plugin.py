"""The pytest plugin (`jupyter_toolhost.pytest_plugin`): a user's notebook is a test as is.

The end-to-end test records a small user notebook against the scripted loopback server (a
`Bash` call that sleeps, so durations differ between runs), saves it as a replayed run
leaves it, and then runs plain `python -m pytest --nbval` on its folder, twice, in a
subprocess whose environment points `ANTHROPIC_*` at a closed port: no conftest, no
sanitizer file. The other tests run pytest in-process through `pytester` with a notebook
present and check what the plugin does to `os.environ`, and that it does nothing otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kernel_helpers import is_answer

from jupyter_toolhost import pytest_plugin
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

if TYPE_CHECKING:
    import nbformat

pytest_plugins = ["pytester"]

ENV_CELL = 'import os\nprint(sorted(k for k in os.environ if k.startswith("ANTHROPIC_")))'
AGENT_CELL = "%%agent --cassette demo.json\nWait a moment, then say hello."
HEADER = pytest_plugin.HEADER


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_TOOLHOST_"))
    }
    env.pop("PYTEST_ADDOPTS", None)
    env["HOME"] = str(home)
    return env


def _user_notebook() -> nbformat.NotebookNode:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%agent allow Bash"),
        nbformat.v4.new_code_cell(AGENT_CELL),
        nbformat.v4.new_code_cell(ENV_CELL),
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return notebook


def _execute(notebook: nbformat.NotebookNode, folder: Path, env: dict[str, str]) -> None:
    from nbclient import NotebookClient

    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute(env=env)


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only `demo.ipynb` (saved from a replayed run) and `demo.json`."""
    import nbformat

    root = tmp_path_factory.mktemp("plugin-e2e")
    folder = root / "my-notebooks"
    folder.mkdir()
    home = root / "home"
    home.mkdir()
    notebook = _user_notebook()
    script = [
        Turn([tool_use("Bash", {"command": "sleep 0.2 && echo waited"})]),
        Turn([text("Hello after the wait.")]),
    ]
    with MessagesServer(script) as server:
        recording = {
            **_clean_env(home),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key",
        }
        _execute(notebook, folder, recording)
        assert server.errors == [], server.errors
        assert server.remaining_turns == 0
    assert (folder / "demo.json").exists(), "the agent cell recorded no cassette"
    # Saved as a user keeps it: the outputs of an offline replay of that recording.
    _execute(notebook, folder, _clean_env(home))
    nbformat.write(notebook, folder / "demo.ipynb")
    for made in folder.iterdir():
        if made.name not in ("demo.ipynb", "demo.json"):
            shutil.rmtree(made)
    return folder


def test_nbval_passes_a_recorded_user_notebook_with_nothing_copied(
    user_folder: Path, tmp_path: Path
):
    import nbformat

    saved = nbformat.read(user_folder / "demo.ipynb", as_version=4)
    agent = saved.cells[2].outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in agent)
    answer = "".join(o["data"]["text/plain"] for o in agent if is_answer(o))
    assert "sleep 0.2" in html and "Hello after the wait." in answer, agent
    assert len(re.findall('class="toolhost-time"', html)) >= 2, "no durations to mask"
    assert any(pytest_plugin.TOOLHOST_MIME in o.get("data", {}) for o in agent)
    assert saved.cells[3].outputs[0]["text"] == "[]\n"
    assert sorted(p.name for p in user_folder.iterdir()) == ["demo.ipynb", "demo.json"]

    env = {
        **_clean_env(tmp_path),
        "ANTHROPIC_API_KEY": "sk-fake",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{_closed_port()}",
    }
    for run in (1, 2):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "."],
            cwd=user_folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        took = time.monotonic() - started
        print(f"nbval run {run}: {took:.1f} s")
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
        assert "4 passed" in done.stdout, done.stdout[-3000:]
        assert HEADER in done.stdout
    assert "conftest.py" not in {p.name for p in user_folder.parent.iterdir()}


def test_nbval_without_the_plugin_fails_on_the_same_folder(user_folder: Path, tmp_path: Path):
    """The control: what the plugin fixes is really there to fix."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:jupyter_toolhost",
            ".",
        ],
        cwd=user_folder,
        env={**_clean_env(tmp_path), "ANTHROPIC_API_KEY": "sk-fake"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "mismatch 'application/vnd.jupyter.toolhost.v1+json'" in done.stdout
    assert "ANTHROPIC_API_KEY" in done.stdout  # the env cell saw the key


# ── in-process runs (pytester) ───────────────────────────────────────────────────────────

TOOLHOST_NOTEBOOK = {"%load_ext jupyter_toolhost": "", "1 + 1": "2"}
PLAIN_NOTEBOOK = {"1 + 1": "2"}


def _write_notebook(path: Path, cells: dict[str, str]) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    for number, (source, result) in enumerate(cells.items(), 1):
        cell = nbformat.v4.new_code_cell(source, execution_count=number)
        if result:
            cell.outputs = [
                nbformat.v4.new_output(
                    "execute_result", {"text/plain": result}, execution_count=number
                )
            ]
        notebook.cells.append(cell)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, path)


def _env_test(pytester: pytest.Pytester, expected: dict[str, str | None]) -> None:
    """A test file asserting what the environment holds while the tests run."""
    pytester.makepyfile(
        test_env=f"""
        import os

        def test_environment():
            expected = {expected!r}
            seen = {{name: os.environ.get(name) for name in expected}}
            assert seen == expected
        """
    )


@pytest.fixture
def user_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """ANTHROPIC_* as a user with a key has them, in a pytester folder of its own."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    values = {
        "ANTHROPIC_API_KEY": "sk-fake",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "JUPYTER_TOOLHOST_HOME": "/somewhere/else",
    }
    for name in [n for n in os.environ if n.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv(pytest_plugin.APPROVAL_TIMEOUT_ENV, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def _snapshot() -> dict[str, str]:
    """The environment, less what pytest itself sets per test (an inline run clears it)."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def test_a_toolhost_notebook_under_nbval_scrubs_anthropic_and_restores_it(
    pytester: pytest.Pytester, user_env: dict[str, str]
):
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    _env_test(
        pytester,
        {
            "ANTHROPIC_API_KEY": None,
            "ANTHROPIC_BASE_URL": None,
            "JUPYTER_TOOLHOST_HOME": "/somewhere/else",
            pytest_plugin.APPROVAL_TIMEOUT_ENV: "5",
        },
    )
    before = _snapshot()
    result = pytester.runpytest("--nbval-lax", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([HEADER])
    result.stdout.no_fnmatch_line("*removed ANTHROPIC_API_KEY*")  # names only with -v
    assert _snapshot() == before


def test_verbose_names_what_was_removed_and_quiet_prints_nothing(
    pytester: pytest.Pytester, user_env: dict[str, str]
):
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    verbose = pytester.runpytest("--nbval-lax", "-p", "no:cacheprovider", "-v")
    verbose.assert_outcomes(passed=2)
    verbose.stdout.fnmatch_lines(
        [
            HEADER,
            "jupyter_toolhost: removed ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; "
            f"{pytest_plugin.APPROVAL_TIMEOUT_ENV}=5",
        ]
    )
    quiet = pytester.runpytest("--nbval-lax", "-p", "no:cacheprovider", "-q")
    quiet.assert_outcomes(passed=2)
    assert "jupyter_toolhost" not in quiet.stdout.str()


def test_a_users_approval_timeout_is_kept(
    pytester: pytest.Pytester, user_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(pytest_plugin.APPROVAL_TIMEOUT_ENV, "30")
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    _env_test(pytester, {"ANTHROPIC_API_KEY": None, pytest_plugin.APPROVAL_TIMEOUT_ENV: "30"})
    result = pytester.runpytest("--nbval-lax", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert os.environ[pytest_plugin.APPROVAL_TIMEOUT_ENV] == "30"


def test_toolhost_live_keeps_the_environment(pytester: pytest.Pytester, user_env: dict[str, str]):
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    _env_test(pytester, {**user_env, pytest_plugin.APPROVAL_TIMEOUT_ENV: None})
    before = _snapshot()
    result = pytester.runpytest("--nbval-lax", "--toolhost-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert HEADER not in result.stdout.str()
    assert _snapshot() == before


def test_a_run_without_notebooks_is_left_alone(pytester: pytest.Pytester, user_env: dict[str, str]):
    # A toolhost notebook lies in the folder, but nothing collects it.
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    _env_test(pytester, {**user_env, pytest_plugin.APPROVAL_TIMEOUT_ENV: None})
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "jupyter_toolhost:" not in result.stdout.str()


def test_a_notebook_without_toolhost_is_left_alone(
    pytester: pytest.Pytester, user_env: dict[str, str]
):
    _write_notebook(pytester.path / "plain.ipynb", PLAIN_NOTEBOOK)
    _env_test(pytester, {**user_env, pytest_plugin.APPROVAL_TIMEOUT_ENV: None})
    pytester.makeconftest(
        f"""
        def pytest_collection_finish(session):
            for node in session.items:
                skipped = getattr(node.parent, "skip_compare", ())
                assert {pytest_plugin.TOOLHOST_MIME!r} not in skipped
                assert not getattr(node.parent, "sanitize_patterns", {{}})
        """
    )
    result = pytester.runpytest("--nbval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "jupyter_toolhost:" not in result.stdout.str()


def test_nbval_collectors_get_the_skip_and_the_patterns(
    pytester: pytest.Pytester, user_env: dict[str, str]
):
    _write_notebook(pytester.path / "mine.ipynb", TOOLHOST_NOTEBOOK)
    (pytester.path / "mine.cfg").write_text("[regex1]\nregex: 2\nreplace: two\n")
    pytester.makeconftest(
        f"""
        def pytest_runtest_call(item):
            file = item.parent
            assert {pytest_plugin.TOOLHOST_MIME!r} in file.skip_compare
            patterns = dict(file.sanitize_patterns)
            for regex, replacement in {pytest_plugin.SANITIZE_PATTERNS!r}.items():
                assert patterns[regex] == replacement
            assert patterns["2"] == "two"  # the user's file still applies
        """
    )
    result = pytester.runpytest(
        "--nbval", "--nbval-sanitize-with", "mine.cfg", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)


def test_nbmake_runs_get_the_environment_part(pytester: pytest.Pytester, user_env: dict[str, str]):
    if os.environ.get("CI") != "true":
        pytest.importorskip("nbmake")
    _write_notebook(
        pytester.path / "mine.ipynb",
        {
            "%load_ext jupyter_toolhost": "",
            "import os\nassert 'ANTHROPIC_API_KEY' not in os.environ\n"
            f"assert os.environ['{pytest_plugin.APPROVAL_TIMEOUT_ENV}'] == '5'": "",
        },
    )
    before = _snapshot()
    result = pytester.runpytest("--nbmake", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([HEADER])
    assert _snapshot() == before


# ── the module itself ─────────────────────────────────────────────────────────────────────


def test_importing_the_plugin_is_cheap():
    probe = (
        "import sys, jupyter_toolhost.pytest_plugin as p\n"
        "heavy = ('IPython', 'anthropic', 'pydantic', 'ipywidgets', 'nbformat', 'nbval')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_constants_agree_with_the_renderer():
    from jupyter_toolhost.jupyter.views import render

    assert pytest_plugin.TOOLHOST_MIME == render.MIME_TYPE
    html = (
        f'<b>Bash</b> <span class="{render.TIME_CLASS}" style="color:#666">226 ms</span> '
        + render.tokens_html("· 1,234 tokens · image 1092×1092 px")
    )
    for regex, replacement in pytest_plugin.SANITIZE_PATTERNS.items():
        html = re.sub(regex, replacement, html)
    spans = re.findall(r'<span class="([^"]+)"[^>]*>([^<]*)</span>', html)
    assert spans == [(render.TIME_CLASS, "…"), (render.TOKENS_CLASS, "…")]
    assert "1,234" not in html and "226" not in html


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("%load_ext jupyter_toolhost", True),
        (["%%agent --cassette x.json\n", "Say hi."], True),
        ("  %%agent\nhi", True),
        ("x = 1\n%load_ext jupyter_toolhost\n", True),
        ("%load_ext jupyter_toolhost_extra", False),
        ("print('%%agent')", False),
        ("import jupyter_toolhost", False),
    ],
)
def test_which_notebooks_count_as_using_toolhost(tmp_path: Path, source: object, uses: bool):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": source}]}))
    assert pytest_plugin.uses_toolhost(path) is uses
    markdown = tmp_path / "m.ipynb"
    markdown.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": source}]}))
    assert pytest_plugin.uses_toolhost(markdown) is False
    broken = tmp_path / "b.ipynb"
    broken.write_text("{not json")
    assert pytest_plugin.uses_toolhost(broken) is False
