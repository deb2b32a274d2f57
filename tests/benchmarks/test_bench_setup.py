"""`./dev bench` installs the peers itself, and the peers benchmark never drops one silently.

The `dev` script runs for real against a stand-in venv whose `python` only records how it
was called (so nothing is installed); the benchmark's contender list is built in a real
subprocess in which pydantic-ai cannot be imported.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HIDE_PYDANTIC_AI = (
    "import sys; sys.modules['pydantic_ai'] = None; "  # None in sys.modules: ImportError
    "from benchmarks import bench_peers; "
    "print('contenders:', ' '.join(c.key for c in bench_peers.contenders()))"
)


def stand_in_venv(tmp_path: Path) -> tuple[Path, Path]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    python = venv / "bin" / "python"
    python.write_text(
        f'#!/bin/sh\necho "require=${{JUPYTER_TOOLHOST_BENCH_REQUIRE_PEERS:-}} $*" >> "{log}"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return venv, log


def run_dev(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JUPYTER_TOOLHOST_VENV": str(venv)}
    return subprocess.run(
        [str(REPO / "dev"), *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_dev_bench_installs_the_bench_extra_and_requires_the_peers(tmp_path: Path) -> None:
    venv, log = stand_in_venv(tmp_path)
    done = run_dev(venv, "bench", "peers")
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert "require= -m pip install -q --no-compile -e .[test,bench]" in calls, calls
    assert calls[-1] == "require=1 -m benchmarks peers", calls
    # Installed once: a second run with pyproject.toml unchanged goes straight to the benchmarks.
    log.unlink()
    assert run_dev(venv, "bench").returncode == 0
    assert log.read_text().splitlines() == ["require=1 -m benchmarks"]


def test_the_test_extra_alone_does_not_count_as_the_bench_install(tmp_path: Path) -> None:
    venv, log = stand_in_venv(tmp_path)
    (venv / ".toolhost-installed").write_text(
        subprocess.run(
            ["sha256sum", "pyproject.toml"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.split()[0]
        + "\n"
    )
    assert run_dev(venv, "bench").returncode == 0
    install = "require= -m pip install -q --no-compile -e .[test,bench]"
    assert install in log.read_text().splitlines()


def test_the_peers_benchmark_fails_loudly_without_pydantic_ai_under_dev_bench() -> None:
    env = {**os.environ, "JUPYTER_TOOLHOST_BENCH_REQUIRE_PEERS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", HIDE_PYDANTIC_AI],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "pydantic-ai, the main peer, cannot be imported" in done.stderr
    assert "contenders:" not in done.stdout


def test_without_dev_bench_a_missing_pydantic_ai_is_a_visible_warning() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOOLHOST_BENCH_REQUIRE_PEERS"}
    done = subprocess.run(
        [sys.executable, "-c", HIDE_PYDANTIC_AI],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING: pydantic-ai is not installed" in done.stderr
    assert done.stdout.split() == ["contenders:", "ours", "sdk_runner", "sdk_eager", "bare"]
