"""pytest plugin: notebooks that use jupyter_toolhost run as tests with nothing to copy.

Registered through the ``pytest11`` entry point, so it is active wherever the package is
installed. It acts only when a run collects a notebook (``.ipynb``, through nbval or nbmake)
whose source loads the extension or has an ``%%agent`` cell; any other run is left alone.

- Environment: every ``ANTHROPIC_*`` variable is removed from ``os.environ`` once collection
  is done, before the kernels start (they inherit it), so each ``%%agent`` cell replays its
  cassette offline instead of calling or recording against the API, and
  ``JUPYTER_TOOLHOST_APPROVAL_TIMEOUT`` is set to 5 s if unset, so an approval prompt can
  never hang a run. Both are undone when pytest finishes. ``--toolhost-live`` keeps the
  environment as it is (to record, or to call the real API).
- nbval: the toolhost JSON payload is not compared (it carries timings and token counts for
  the JupyterLab renderer; its ``text/plain`` and ``text/html`` twins are), and the few
  strings in compared text that vary between runs are masked (`SANITIZE_PATTERNS`). A
  user's own ``--nbval-sanitize-with`` file is applied on top.

Importing this module is cheap (standard library only): pytest imports it in every run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

TOOLHOST_MIME = "application/vnd.jupyter.toolhost.v1+json"
"""The renderer's MIME type (`jupyter_toolhost.jupyter.views.render.MIME_TYPE`)."""

SCRUBBED_PREFIX = "ANTHROPIC_"
APPROVAL_TIMEOUT_ENV = "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT"
APPROVAL_TIMEOUT_SECONDS = "5"
HEADER = (
    "jupyter_toolhost: notebooks replay offline (ANTHROPIC_* removed); --toolhost-live keeps them"
)
"""The line shown after collection when the environment was changed."""

SANITIZE_PATTERNS: dict[str, str] = {
    r'(<span class="toolhost-time"[^>]*>)[^<]*</span>': r"\1…</span>",
    r'(<span class="toolhost-tokens"[^>]*>)[^<]*</span>': r"\1…</span>",
}
"""nbval sanitizer patterns (regex -> replacement) for compared text and HTML.

- ``toolhost-time`` spans: the durations the renderer shows in ``text/html`` (a tool call's
  run time, a cell's total). They differ on every run.
- ``toolhost-tokens`` spans: the tokens a call's result adds to the conversation (measured
  from the API's usage, so they change with the model and the tokenizer).

The renderer keeps everything else that varies out of the HTML, so these spans are the only
part masked.
"""

_LIVE_OPTION = "toolhost_live"
_LOAD_EXT = re.compile(r"^[ \t]*%load_ext[ \t]+jupyter_toolhost[ \t]*$", re.MULTILINE)
_AGENT_CELL = re.compile(r"\s*%%agent(?:\s|$)")
_uses_cache: dict[Path, bool] = {}


class _Applied:
    """What this plugin changed in `os.environ`, to undo it in `pytest_unconfigure`."""

    def __init__(self) -> None:
        self.removed: dict[str, str] = {}
        self.set_timeout = False


_applied_key = pytest.StashKey[_Applied]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jupyter_toolhost")
    group.addoption(
        "--toolhost-live",
        action="store_true",
        dest=_LIVE_OPTION,
        default=False,
        help=(
            "Keep ANTHROPIC_* in the environment of notebook kernels (record cassettes or "
            "call the real API). By default notebooks using jupyter_toolhost replay offline."
        ),
    )


def uses_toolhost(path: str | os.PathLike[str]) -> bool:
    """Whether the notebook at `path` loads jupyter_toolhost or has an `%%agent` cell."""
    key = Path(path)
    if key not in _uses_cache:
        _uses_cache[key] = _read_uses_toolhost(key)
    return _uses_cache[key]


def _read_uses_toolhost(path: Path) -> bool:
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return False
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(line) for line in source)
        if isinstance(source, str) and (_AGENT_CELL.match(source) or _LOAD_EXT.search(source)):
            return True
    return False


def _notebook_path(node: Any) -> Path | None:
    """The `.ipynb` a collected item or collector comes from (nbval and nbmake), if any."""
    path = getattr(node, "path", None) or getattr(node, "fspath", None)
    if path is None or not str(path).endswith(".ipynb"):
        return None
    return Path(str(path))


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption(_LIVE_OPTION) or _applied_key in config.stash:
        return
    notebooks = {path for item in items if (path := _notebook_path(item)) is not None}
    if not any(uses_toolhost(path) for path in notebooks):
        return
    applied = _Applied()
    for name in [n for n in os.environ if n.startswith(SCRUBBED_PREFIX)]:
        applied.removed[name] = os.environ.pop(name)
    if APPROVAL_TIMEOUT_ENV not in os.environ:
        os.environ[APPROVAL_TIMEOUT_ENV] = APPROVAL_TIMEOUT_SECONDS
        applied.set_timeout = True
    config.stash[_applied_key] = applied


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """One header line when the environment was changed (the names too, with -v).

    This is the header written after collection (`pytest_report_header` is written before
    it, when nothing is known yet); like the other headers it is left out with -q.
    """
    applied = config.stash.get(_applied_key, None)
    if applied is None or config.get_verbosity() < 0:
        return []
    lines = [HEADER]
    if config.get_verbosity() > 0:
        removed = ", ".join(sorted(applied.removed)) or "none was set"
        timeout = (
            f"; {APPROVAL_TIMEOUT_ENV}={APPROVAL_TIMEOUT_SECONDS}" if applied.set_timeout else ""
        )
        lines.append(f"jupyter_toolhost: removed {removed}{timeout}")
    return lines


def pytest_collectstart(collector: pytest.Collector) -> None:
    """nbval's notebook collector: skip the toolhost payload and mask varying text."""
    skipped = getattr(collector, "skip_compare", None)
    patterns = getattr(collector, "sanitize_patterns", None)
    if not isinstance(skipped, tuple) or not isinstance(patterns, dict):
        return
    path = _notebook_path(collector)
    if path is None or not uses_toolhost(path):
        return
    if TOOLHOST_MIME not in skipped:
        collector.skip_compare = (*skipped, TOOLHOST_MIME)  # type: ignore[attr-defined]
    for regex, replacement in SANITIZE_PATTERNS.items():
        patterns.setdefault(regex, replacement)


def pytest_unconfigure(config: pytest.Config) -> None:
    applied = config.stash.get(_applied_key, None)
    if applied is None:
        return
    if applied.set_timeout and os.environ.get(APPROVAL_TIMEOUT_ENV) == APPROVAL_TIMEOUT_SECONDS:
        del os.environ[APPROVAL_TIMEOUT_ENV]
    for name, value in applied.removed.items():
        os.environ.setdefault(name, value)
    del config.stash[_applied_key]
