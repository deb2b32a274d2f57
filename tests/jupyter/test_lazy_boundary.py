"""The front end's lazy imports sit at one boundary: `jupyter.LOADED_ON_USE` lists every
module imported inside a function of `jupyter_toolhost/jupyter/`, and `%load_ext` loads
none of them (what keeps it within its 150 ms)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from test_import_structure import ROOT, module_name

from jupyter_toolhost.jupyter import LOADED_ON_USE

ENTRY = ("load_ipython_extension", "unload_ipython_extension")
"""The extension's own entry: it imports what `%load_ext` loads, so that importing one view
(`jupyter.views.render`, as the pytest plugin's test does) does not load the host."""


def _imports_in_functions() -> dict[str, set[str]]:
    """Each module imported inside a function of the front end -> where."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "jupyter").rglob("*.py")):
        here = module_name(path)
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if path.name == "__init__.py" and function.name in ENTRY:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        found.setdefault(alias.name, set()).add(here)
                elif isinstance(node, ast.ImportFrom):
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    name = ".".join([*base, node.module or ""]) if node.level else node.module
                    found.setdefault((name or "").rstrip("."), set()).add(here)
    return found


def test_every_import_inside_a_function_is_on_the_list() -> None:
    found = _imports_in_functions()
    stray = {name: sorted(where) for name, where in found.items() if name not in LOADED_ON_USE}
    assert stray == {}, "import these at module level, or list them in LOADED_ON_USE"
    assert set(found) == set(LOADED_ON_USE), "a listed module nothing loads on use"


def test_load_ext_loads_none_of_them(tmp_path: Path) -> None:
    probe = (
        "import json, sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'jupyter_toolhost')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "jupyter_toolhost.jupyter.host" in loaded  # the probe did load the extension
    assert sorted(LOADED_ON_USE & loaded) == []
