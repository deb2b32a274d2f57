"""Running notebooks headless, as a user's CI does: papermill and `jupyter nbconvert --execute`
as real subprocesses (tests/test_headless_runs.py, tests/test_headless_clients.py)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PAPERMILL = [sys.executable, "-m", "papermill"]
NBCONVERT_EXECUTE = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute"]


def require(module: str) -> None:
    """Skip when a client is missing, except under CI=true, where that is a failure."""
    if os.environ.get("CI") == "true":
        importlib.import_module(module)
    else:
        pytest.importorskip(module)


def run_headless(
    command: list[str], *, cwd: Path, env: dict[str, str], label: str, timeout: float
) -> float:
    """Run `command`, print how long it took under `label`, fail with the end of its output
    when it does not exit 0; the seconds it took."""
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    took = time.monotonic() - started
    print(f"{label}: {took:.1f} s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return took
