"""What a function's docstring tells the model: its description and each parameter's.

`@tool` turns a plain function into a tool; its docstring becomes the tool's description
and its parameter sections the input fields' descriptions. Data-science code documents
parameters in NumPy style as often as in Google style, and older code in Sphinx (reST) or
Epydoc fields, so the docstring is read by `docstring_parser`, which knows all four and
picks the style that finds the most in the text. griffe reads the same styles but must be
told which one a docstring uses and does not read Epydoc; `docstring_parser` is small, pure
Python and already installed with the `anthropic` client.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import docstring_parser


@dataclass(frozen=True, slots=True)
class FunctionDoc:
    """A docstring split for the model: the text before the sections, and each documented
    parameter's description on one line."""

    description: str = ""
    parameters: dict[str, str] = field(default_factory=dict[str, str])


def parse_docstring(doc: str | None) -> FunctionDoc:
    """Read a docstring in Google, NumPy, Sphinx or Epydoc style.

    Types written in the docstring are left out: the input schema takes them from the type
    hints. A docstring that no style reads (a malformed section) is all description."""
    if not doc or not doc.strip():
        return FunctionDoc()
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return FunctionDoc(description=inspect.cleandoc(doc))
    parameters: dict[str, str] = {}
    for param in parsed.params:
        if not param.description:
            continue
        for name in param.arg_name.split(","):  # NumPy's "x, y : float"
            parameters[name.strip().lstrip("*")] = _one_line(param.description)
    return FunctionDoc(description=(parsed.description or "").strip(), parameters=parameters)


def _one_line(text: str) -> str:
    """A parameter's description wrapped over several lines, as one line."""
    return " ".join(text.split())
