"""What the next kernel or IPython start runs: the paths a write must never reach unasked.

A kernel is started outside the Bash sandbox, by the user, later. So a file the agent writes
that the next start *runs* is code the agent runs outside every fence. How Python and
Jupyter start decides which files those are:

- **Every stock kernelspec runs** ``python -m ipykernel_launcher`` in the notebook's folder.
  With ``-m``, that folder is first on ``sys.path``, so ``ipykernel_launcher.py`` (or a
  package of that name) there is what runs. The launcher then takes the folder off the path
  while it imports ipykernel, and IPython's ``init_path`` puts it back before the rest of
  the start (the debugger, the history, extensions, startup files). A module of any name the
  start imports, placed in a folder that comes before the real one on the path, runs
  instead of it: in the notebook's folder, in a ``PYTHONPATH`` folder, or in site-packages
  itself (the installed ``ipykernel/`` or ``IPython/`` rewritten).
- **Python's ``site``** runs every ``*.pth`` line that starts with ``import`` in the
  site-packages folders (the user's too), and imports ``sitecustomize`` and
  ``usercustomize`` from anywhere on the path.
- **IPython** runs ``$IPYTHONDIR`` (``~/.ipython``) ``profile_*/startup/*.py`` and
  ``*.ipy``, and the profile's ``ipython_config.py`` and ``ipython_kernel_config.py``.
- **Jupyter** reads ``jupyter_*_config.py``/``.json`` from every folder ``jupyter --paths``
  lists under *config* (``~/.jupyter``, ``JUPYTER_CONFIG_DIR``, the environment's
  ``etc/jupyter``...), and starts kernels by the kernelspecs in each data folder's
  ``kernels/`` (a kernelspec names the command a kernel start runs).

The module names are derived, not listed: `kernel_start_modules` starts a real kernel
application (``IPKernelApp.initialize``, as ``ipykernel_launcher`` does) in a fresh,
isolated interpreter, in an empty folder with an empty home (so nothing of the user's, and
nothing the agent wrote, runs), and takes every top-level module it imported.
`FALLBACK_MODULES` (what a running kernel had imported, measured) is added, and stands in
alone where the derivation cannot run (no ipykernel). ``ipykernel_launcher``,
``sitecustomize``, ``usercustomize`` and this package (the notebook's first cell loads it)
are always in. ``$PYTHONSTARTUP`` names a file IPython runs too, and the data folders'
``labextensions/`` and ``nbextensions/`` hold code the next front end loads into the page.

The folders come from the environment as the next start will read it (`startup_places`).
Everything here is compared case-folded, on the path as written and as resolved.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import site
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .paths import is_inside

ALWAYS_MODULES = ("ipykernel_launcher", "sitecustomize", "usercustomize", "jupyter_toolhost")
"""Module names protected whatever the derivation finds: the launcher every kernelspec
runs, the two modules ``site`` imports at every start, and this package (loaded by the
notebook's first cell; its own permission code is among what it runs)."""

FALLBACK_MODULES = (
    "IPython", "ipykernel", "traitlets", "jupyter_client", "jupyter_core", "zmq", "tornado",
    "comm", "debugpy", "psutil", "platformdirs", "packaging", "pygments", "prompt_toolkit",
    "jedi", "parso", "decorator", "pexpect", "ptyprocess", "wcwidth", "executing",
    "asttokens", "stack_data", "pure_eval", "matplotlib_inline", "nest_asyncio", "dateutil",
    "typing_extensions", "asyncio", "json", "logging", "argparse", "socket", "ssl", "uuid",
    "threading", "subprocess", "signal", "selectors", "pdb", "bdb", "code", "sqlite3",
    "pwd", "resource", "runpy",
)  # fmt: skip
"""What a kernel start imports, as measured in a running kernel's ``sys.modules``
(ipykernel 7.4, IPython 9, December 2026): always added, since some of it is imported after
``initialize`` (``psutil``, ``pwd``, ``resource`` when the kernel starts serving; ``jedi``
at the first completion), and all a start imports where the derivation cannot run."""

_DERIVE = r"""
import importlib, os, sys
before = {n.split(".")[0] for n in sys.modules}
kernelapp = importlib.import_module(sys.argv[1])
app = kernelapp.IPKernelApp.instance()
app.initialize(["--IPKernelApp.connection_file=" + os.path.join(os.getcwd(), "k.json"),
                "--ip=127.0.0.1"])
names = sorted({n.split(".")[0] for n in sys.modules} - before)
with open(os.path.join(os.getcwd(), "names.txt"), "w") as out:
    out.write("\n".join(names))
os._exit(0)
"""
"""Run with ``python -I`` in an empty folder, given `KERNEL_APP`: the modules a kernel start
imports after the interpreter's own start (which nothing on the path can shadow any more).
This package never imports ipykernel itself (the permission layer runs without Jupyter):
only that child interpreter does, and without ipykernel it fails and `FALLBACK_MODULES`
stand alone."""
KERNEL_APP = "ipykernel.kernelapp"

_derived: list[frozenset[str]] = []
_derive_lock = threading.Lock()


def kernel_start_modules() -> frozenset[str]:
    """The top-level module names a kernel start imports (case-folded), derived once per
    process (about 0.6 s; see the module docstring)."""
    with _derive_lock:
        if not _derived:
            found = (_derive() or frozenset()) | set(FALLBACK_MODULES) | set(ALWAYS_MODULES)
            names = {n for n in found if n and n != "__main__"}
            _derived.append(frozenset(n.casefold() for n in names))
        return _derived[0]


def warm_up() -> None:
    """Derive the module names in a background thread, so a first decision seldom waits."""
    if not _derived:
        threading.Thread(target=kernel_start_modules, name="toolhost-startup", daemon=True).start()


def _derive() -> frozenset[str] | None:
    with tempfile.TemporaryDirectory(prefix="toolhost-kernel-start-") as folder:
        empty = os.path.join(folder, "home")
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
        env.update(
            HOME=empty,
            IPYTHONDIR=os.path.join(empty, "ipython"),
            JUPYTER_CONFIG_DIR=os.path.join(empty, "jupyter"),
            JUPYTER_RUNTIME_DIR=os.path.join(folder, "runtime"),
            JUPYTER_PLATFORM_DIRS="1",
        )
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", _DERIVE, KERNEL_APP],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=20,
                check=False,
            )
            with open(os.path.join(folder, "names.txt"), encoding="utf-8") as handle:
                names = frozenset(handle.read().split())
        except (OSError, subprocess.SubprocessError):
            return None
    return names if done.returncode == 0 and names else None


@dataclass(frozen=True, slots=True)
class StartupPlaces:
    """Where the next kernel or IPython start looks, as absolute paths (each also resolved)."""

    folders: tuple[str, ...]
    """Every write inside these is protected: the IPython folder (profiles, ``startup/``),
    the Jupyter config folders, each data folder's ``kernels/``, user site-packages."""
    module_dirs: tuple[str, ...]
    """Folders on the kernel's import path: the working directories, ``sys.path``,
    site-packages. A module of a start name or a ``*.pth`` file directly inside one is
    protected (see `startup_file`)."""
    names: frozenset[str]
    """The start module names, case-folded (`kernel_start_modules`)."""
    folded_folders: tuple[str, ...] = ()
    folded_module_dirs: tuple[str, ...] = ()


def startup_places(home: str, working_dirs: Iterable[str] = ()) -> StartupPlaces:
    """The places for a user whose home is `home`, with the session's working directories
    and the kernel's own folder among the module folders."""
    env = tuple(os.environ.get(k, "") for k in _ENV_KEYS)
    return _places(home, (*working_dirs, _getcwd()), env, tuple(sys.path))


_ENV_KEYS = (
    "IPYTHONDIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_CONFIG_PATH",
    "JUPYTER_DATA_DIR",
    "JUPYTER_PATH",
    "JUPYTER_PREFER_ENV_PATH",
    "PYTHONSTARTUP",
    "HOME",
    "XDG_DATA_HOME",
)


def _getcwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


@lru_cache(maxsize=64)
def _places(
    home: str, working: tuple[str, ...], env: tuple[str, ...], path: tuple[str, ...]
) -> StartupPlaces:
    del env  # (part of the cache key only: the folders below are read from it)
    folders = _forms(
        [
            *ipython_dirs(home),
            *jupyter_config_dirs(home),
            *kernelspec_dirs(home),
            *_startup_file_env(),
        ]
    )
    folders += _forms(user_site_dirs())
    modules = _forms(
        m
        for m in (*working, *(p or _getcwd() for p in path), *site_dirs())
        if not m.endswith(".zip")
    )
    return StartupPlaces(
        folders=folders,
        module_dirs=modules,
        names=kernel_start_modules(),
        folded_folders=tuple(f.casefold() for f in folders),
        folded_module_dirs=tuple(m.casefold() for m in modules),
    )


def _startup_file_env() -> list[str]:
    """``$PYTHONSTARTUP``: IPython runs that file at every start (``exec_PYTHONSTARTUP``)."""
    named = os.environ.get("PYTHONSTARTUP", "")
    return [os.path.expanduser(named)] if named else []


def ipython_dirs(home: str) -> list[str]:
    """``$IPYTHONDIR`` and ``~/.ipython`` (IPython reads the first that is set)."""
    found = [os.environ.get("IPYTHONDIR", ""), posixpath.join(home, ".ipython")]
    return [os.path.expanduser(p) for p in found if p]


def jupyter_config_dirs(home: str) -> list[str]:
    """The config folders of ``jupyter --paths``, and ``~/.jupyter``."""
    found = [posixpath.join(home, ".jupyter")]
    try:
        from jupyter_core.paths import jupyter_config_path

        found += jupyter_config_path()
    except Exception:  # jupyter_core absent or broken: the user's folder still counts
        found.append(os.environ.get("JUPYTER_CONFIG_DIR", ""))
    return [p for p in found if p]


def kernelspec_dirs(home: str) -> list[str]:
    """``kernels/`` in each data folder of ``jupyter --paths``, and in the user's; and the
    front end's extensions there (``labextensions/``, ``nbextensions/``: code the next
    JupyterLab or Notebook start loads into the page)."""
    data = [posixpath.join(home, ".local", "share", "jupyter")]
    try:
        from jupyter_core.paths import jupyter_path

        data += jupyter_path()
    except Exception:
        data.append(os.environ.get("JUPYTER_DATA_DIR", ""))
    return [posixpath.join(d, sub) for d in data if d for sub in _DATA_SUBFOLDERS]


_DATA_SUBFOLDERS = ("kernels", "labextensions", "nbextensions")


def user_site_dirs() -> list[str]:
    """The user's site-packages (``site.getusersitepackages()``): ``pip install --user``'s
    folder, read at every start where user site is on."""
    try:
        return [site.getusersitepackages()]
    except Exception:  # (a frozen or embedded interpreter)
        return []


def site_dirs() -> list[str]:
    """Every folder ``site`` reads ``*.pth`` files from (the environment's site-packages)."""
    try:
        return list(site.getsitepackages())
    except Exception:
        return []


def _forms(paths: Iterable[str]) -> tuple[str, ...]:
    """Each path absolute and normalised, and resolved, once."""
    found: dict[str, None] = {}
    for path in paths:
        absolute = posixpath.normpath(os.path.abspath(path))
        found[absolute] = None
        found[os.path.realpath(absolute)] = None
    return tuple(found)


@dataclass(frozen=True, slots=True)
class StartupHit:
    """A path the next start would run, and why; with `package`, only while that folder is a
    regular package (it holds an ``__init__``): a folder without one shadows nothing."""

    reason: str
    package: str | None = None


_IMPORTABLE = (".py", ".pyc", ".pyw", ".so", ".pyd")
"""The endings of a file an import statement loads as a module (an extension module's name
carries its ABI tag before ``.so``: ``zmq.cpython-311-x86_64-linux-gnu.so``)."""


def startup_file(path: str, places: StartupPlaces) -> StartupHit | None:
    """What the next start would do with the absolute `path`, or None when nothing."""
    return _startup_file(path, places)


@lru_cache(maxsize=8192)
def _startup_file(path: str, places: StartupPlaces) -> StartupHit | None:
    # A pure function of the strings, cached: every call's paths are checked.
    folded = path.casefold()
    for folder in places.folded_folders:
        if is_inside(folded, folder):
            return StartupHit(f"inside {folder}, which IPython or Jupyter reads at start")
    for folder in places.folded_module_dirs:
        base = folder.rstrip("/")
        if not folded.startswith(base + "/"):
            continue
        rest = folded[len(base) + 1 :].split("/")
        first = rest[0]
        if first.endswith(".pth"):
            return StartupHit(f"a .pth file ({first}), which Python's site module runs at start")
        if first == "__pycache__" and len(rest) > 1:
            first = rest[1]
        elif len(rest) > 1 and "." in first:
            continue  # a folder whose name has a dot is no package
        a_file = len(rest) == 1 or rest[0] == "__pycache__"
        if a_file and not first.endswith(_IMPORTABLE):
            continue  # json.tool, notes.txt: no import finds them
        stem = first.split(".", 1)[0]
        if stem not in places.names:
            continue
        reason = f"a module the kernel imports at start ({stem}), on its import path"
        if len(rest) == 1 or rest[0] == "__pycache__" or rest[1].startswith("__init__."):
            return StartupHit(reason)
        return StartupHit(reason, path[: len(base) + 1 + len(rest[0])])
    return None


def existing_startup_paths(places: StartupPlaces) -> list[str]:
    """The existing paths the places name, for a sandbox to make read-only: each folder; the
    interpreter's own library folders whole (no one writes the standard library); in every
    other module folder, each start module, ``*.pth`` file and start module's
    ``__pycache__`` entry (site-packages stays writable, so ``pip install`` still works)."""
    found = [f for f in places.folders if os.path.lexists(f)]
    library = _library_dirs()
    for folder in places.module_dirs:
        if folder in library:
            found.append(folder)
            continue
        for name in _listdir(folder):
            folded = name.casefold()
            if folded.endswith(".pth") or folded.split(".", 1)[0] in places.names:
                found.append(posixpath.join(folder, name))
            elif folded == "__pycache__":
                cache = posixpath.join(folder, name)
                found += [
                    posixpath.join(cache, n)
                    for n in _listdir(cache)
                    if n.casefold().split(".", 1)[0] in places.names
                ]
    return found


def user_folders(home: str) -> list[str]:
    """The user's own start-up folders (the IPython folder, the Jupyter config folder and
    the user's ``kernels/``): a sandbox makes them before a command runs, so that a folder
    made later cannot escape its read-only mount."""
    data = os.environ.get("JUPYTER_DATA_DIR") or posixpath.join(home, ".local/share/jupyter")
    config = os.environ.get("JUPYTER_CONFIG_DIR") or posixpath.join(home, ".jupyter")
    return [ipython_dirs(home)[0], config, posixpath.join(data, "kernels")]


@lru_cache(maxsize=1)
def _library_dirs() -> frozenset[str]:
    """The standard library's folders (``sysconfig``'s ``stdlib`` and ``platstdlib``, and
    ``lib-dynload``), resolved."""
    import sysconfig

    found: set[str] = set()
    for key in ("stdlib", "platstdlib"):
        with contextlib.suppress(KeyError):
            path = sysconfig.get_paths()[key]
            found.update(_forms([path, posixpath.join(path, "lib-dynload")]))
    return frozenset(found)


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
