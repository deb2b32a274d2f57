"""pytest settings for running the notebooks as tests: ``pytest --nbval notebooks/``.

Two things make a notebook's outputs the same on every machine and every run:

- The kernel runs offline and unconfigured: ``ANTHROPIC_*`` and ``JUPYTER_TOOLHOST_*``
  variables are removed (each ``%%agent`` cell replays its cassette), and ``HOME`` points at
  an empty temporary directory, so no user-level ``~/.toolhost/settings.json`` or IPython
  profile can change a permission decision or an output.
- nbval compares every MIME type of an output except the ones it skips, and it compares
  JSON payloads as they are (its sanitizer only rewrites strings). The toolhost JSON payload
  carries timings and token counts for the JupyterLab renderer, so it is skipped here, as
  nbval itself skips widget model ids; its ``text/plain`` and ``text/html`` twins, which
  hold everything shown and nothing that varies, are compared.

Paths and session ids inside compared text are normalised by ``nbval_sanitize.cfg``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

TOOLHOST_MIME = "application/vnd.jupyter.toolhost.v1+json"
SCRUBBED_PREFIXES = ("ANTHROPIC_", "JUPYTER_TOOLHOST_")

_home: str | None = None


def pytest_configure(config: Any) -> None:
    """Make the kernels nbval starts offline and free of user configuration."""
    global _home
    for name in [n for n in os.environ if n.startswith(SCRUBBED_PREFIXES)]:
        del os.environ[name]
    # A prompt that nobody can answer must fail the run, not hang it.
    os.environ["JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"] = "5"
    _home = tempfile.mkdtemp(prefix="toolhost-nbval-home-")
    os.environ["HOME"] = _home


def pytest_unconfigure(config: Any) -> None:
    if _home is not None:
        shutil.rmtree(_home, ignore_errors=True)


def pytest_collectstart(collector: Any) -> None:
    """Skip comparing the toolhost JSON payload in every notebook nbval collects."""
    skipped = getattr(collector, "skip_compare", None)
    if isinstance(skipped, tuple) and TOOLHOST_MIME not in skipped:
        collector.skip_compare = (*skipped, TOOLHOST_MIME)
