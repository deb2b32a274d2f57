"""The fixtures the shell corpus and the shell generator share: a project with the corpus'
deny rules (`shell_corpus.Project`) and the check that real runs can happen (bubblewrap)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from shell_corpus import Project
from shell_oracle import bwrap_available

CI = os.environ.get("CI") == "true"


@pytest.fixture(scope="module")
def runnable() -> None:
    """Real runs need bubblewrap: skipped without it, except under CI=true (a failure)."""
    problem = bwrap_available()
    if problem is not None:
        if CI:
            pytest.fail(f"CI makes the real runs under bubblewrap: {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """One project for the module, with its own HOME and the Bash sandbox off (the engine is
    what is checked); the grammar and the rules are loaded before the first timed check."""
    base = tmp_path_factory.mktemp("corpus")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(base / "root" / "home"))
        patch.setenv("JUPYTER_TOOLHOST_BASH_SANDBOX", "0")
        for name in ("JUPYTER_TOOLHOST_PERMISSION_MODE", "JUPYTER_TOOLHOST_HOME"):
            patch.delenv(name, raising=False)
        made = Project(base / "root")
        made.decide("true")  # the grammar and the rules load once, outside the figures
        gc.collect()
        gc.freeze()  # the objects made so far: a full collection pass is no check's own cost
        try:
            yield made
        finally:
            made.close()
            gc.unfreeze()
