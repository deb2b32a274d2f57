"""Sphinx configuration for the jupyter-toolhost docs (MyST Markdown, the PyData theme).

Built by ``./dev docs`` and in CI with ``-W --keep-going -n``: warnings are errors and every
reference must resolve: pages, headings (MyST anchors), and this package's functions,
methods, attributes and modules. No step needs the network: there is no intersphinx, so
references to objects outside this package (the standard library, pydantic, anthropic) are
not checked, and neither are class names in type annotations (``py:class``): a signature
names many internal types that have no page of their own and shows them as plain text.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jupyter_toolhost  # noqa: E402

project = "jupyter-toolhost"
author = "the jupyter-toolhost authors"
copyright = "the jupyter-toolhost authors, MIT licence"
release = jupyter_toolhost.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# Headings get anchors, so `page.md#a-heading` links are checked like pages are.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings: list[str] = []

nitpicky = True
nitpick_ignore_regex = [(r"py:.*", r"(?!jupyter_toolhost\b).*"), (r"py:class", r".*")]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "pydata_sphinx_theme"
html_title = "jupyter-toolhost"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
