"""The one gate every piece of HTML a cell shows passes through, and the Markdown it keeps.

Outputs a kernel makes in the session are *trusted* by JupyterLab and Notebook 7: their HTML
and Markdown are inserted without the front end's sanitizer, a notebook saved by its user is
signed and trusted again when reopened, and an nbconvert export copies each output's
``text/html`` into the page. So nothing the model, a tool, an MCP server or a web page wrote
may reach a cell as markup it chose. Two rules close that:

- **The model's Markdown** becomes HTML here, and only here (`markdown_html`): mistune turns
  it into HTML, then nh3 (the Python binding of the Rust sanitiser *ammonia*) keeps an
  allow-list: headings, paragraphs, emphasis, lists, tables, block quotes, code (with its
  ``language-…`` class), rules, line breaks, ``<details>``/``<summary>``, ``<kbd>``,
  ``<sub>``/``<sup>``, links to ``http``, ``https``, ``mailto`` and relative targets, and
  images whose source is a relative path or an inline PNG, JPEG, GIF or WebP. Everything
  else is dropped: scripts and their text, event attributes, ``style``, ``<style>``,
  ``<iframe>``, ``<form>``, ``<meta>``, ``<svg>``, ``<math>``, ``javascript:``/``data:``
  links, and remote images (an image the page loads by itself would carry whatever the
  model put in its address to another server). No ``text/markdown`` leaves the kernel:
  a front end's own Markdown renderer keeps raw HTML in trusted outputs.
- **Every display's HTML** (cards, previews, notices, the request view, the timeline's SVG,
  ``%agent check``, approval prompts and questions) is built from escaped text by its own
  module and then passes `clean_html` as it leaves (`render.Rendered` calls it; widgets get
  `widget_html`). That allow-list holds what those templates use, ``style`` attributes
  limited to layout and colour properties (no ``position``, no ``background``: nothing that
  can cover the page or load a URL), and the SVG elements of the timeline. A template that
  forgot to escape still cannot make a script run.

Displays made by code that PythonExec ran are the kernel's own outputs, as if the user had run
that code in a cell (`render.KernelOutput`): code in the kernel can publish any output
directly, so only the permission to run it is a boundary there, not a filter on what it shows.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import nh3

MARKDOWN_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl",
        "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
        "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong",
        "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u",
        "ul", "var",
    }
)  # fmt: skip
"""What the model's Markdown keeps: what Markdown itself makes, and a few harmless inline
HTML elements models use (``<br>`` in tables, ``<details>``, ``<kbd>``, ``<sub>``)."""
MARKDOWN_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan", "style"},
    "th": {"align", "colspan", "rowspan", "style"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "abbr": {"title"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
"""Link schemes kept (relative links are kept too). ``data`` is let through nh3 only so that
`_attribute` can keep inline images; a ``data:`` link is dropped there."""
INLINE_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*\Z", re.I)
CODE_CLASS = re.compile(r"(?:language-[\w+#.-]{1,40})\Z")
MATH_CLASS = frozenset({"math"})
NO_MATH = "tex2jax_ignore mathjax_ignore"
"""The class of the element every display is wrapped in: MathJax (JupyterLab's, and the one
an nbconvert export loads) typesets ``$…$`` in any HTML output's text, and its TeX has
``\\href``, ``\\style`` and ``\\class``. Only math checked by `_safe_tex` is typeset."""
TYPESET = "math tex2jax_process mathjax_process"
_MATH_REGION = re.compile(r'<(span|div) class="math">([^<]*)</\1>')
_UNSAFE_TEX = re.compile(
    r"\\(?:href|class|style|cssId|html\w*|data\w*|require|unicode|mmlToken|bbox|"
    r"texttip|mathtip|tooltip|toggle|def|edef|gdef|xdef|let|futurelet|csname|"
    r"(?:re|provide)?newcommand|(?:re)?newenvironment|DeclareMathOperator|Newextarrow|"
    r"setOptions|url|verb|char|ce|pu)(?![A-Za-z])"
)
"""TeX commands that make links, classes, styles or attributes, load extensions, or define
macros (which could spell the others): math that uses one is shown as its source, not
typeset."""
_ALIGN = frozenset({"text-align"})
STYLE_PROPERTIES = frozenset(
    {
        "border", "border-bottom", "border-collapse", "border-left", "border-radius",
        "border-right", "border-top", "color", "display", "flex", "flex-flow", "flex-wrap",
        "font-family", "font-size", "font-style", "font-weight", "gap", "line-height",
        "margin", "margin-bottom", "margin-left", "margin-right", "margin-top", "max-height",
        "max-width", "min-width", "opacity", "overflow", "overflow-x", "overflow-y",
        "padding", "padding-bottom", "padding-left", "padding-right", "padding-top",
        "text-align", "text-decoration", "vertical-align", "white-space", "width",
        "word-break", "overflow-wrap", "table-layout", "-webkit-box-orient",
        "-webkit-line-clamp",
    }
)  # fmt: skip
"""CSS properties a display's ``style`` may set: layout, spacing, colours and type. Not
``position``/``z-index``/``transform`` (an output could cover the page or a button), nor
``background*``/``content``/``cursor``/``list-style-image`` (they load URLs)."""
SVG_TAGS = frozenset({"svg", "g", "rect", "line", "text", "title", "defs", "pattern", "path"})
SVG_ATTRIBUTES = frozenset(
    {
        "xmlns", "viewBox", "width", "height", "x", "y", "x1", "x2", "y1", "y2", "rx", "d",
        "fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "font-size",
        "font-weight", "font-family", "text-anchor", "patternUnits", "patternTransform",
        "role", "aria-label",
    }
)  # fmt: skip
DISPLAY_TAGS = MARKDOWN_TAGS | SVG_TAGS | {"caption", "progress", "section", "header", "nav"}
DISPLAY_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set(names) for tag, names in MARKDOWN_ATTRIBUTES.items()},
    "*": {
        "style",
        "class",
        "title",
        "id",
        "role",
        "aria-label",
        "data-status",
        "data-batch",
        "data-what",
    },
    "progress": {"max", "value"},
    "details": {"open"},
    "th": {"align", "colspan", "rowspan", "scope"},
    **{tag: set(SVG_ATTRIBUTES) for tag in SVG_TAGS},
}
DROP_WITH_CONTENT = frozenset({"script", "style", "noscript", "template", "iframe", "object"})
"""Removed with everything inside them (the rest of a dropped element keeps its text)."""


def _attribute(
    element: str, attribute: str, value: str, *, styles: frozenset[str] = STYLE_PROPERTIES
) -> str | None:
    """nh3's per-attribute filter: URLs, classes and ``style`` beyond what nh3 checks."""
    if attribute == "href":
        return None if value.strip().lower().startswith("data:") else value
    if attribute == "src":
        return value if _image_source(value) else None
    if attribute == "class":
        return value if _classes(element, value) else None
    if attribute == "style":
        return _style(value, styles)
    return value


@lru_cache(maxsize=4096)
def _style(value: str, allowed: frozenset[str]) -> str | None:
    """The declarations of `value` whose property is allowed and whose value loads nothing
    and escapes nothing; `value` itself, byte for byte, when all of them are."""
    kept: list[str] = []
    declarations = [d for d in value.split(";") if d.strip()]
    for declaration in declarations:
        name, colon, rest = declaration.partition(":")
        lowered = rest.lower()
        if (
            colon
            and name.strip().lower() in allowed
            and not any(bad in lowered for bad in ("url(", "expression(", "\\", "@", "image("))
        ):
            kept.append(declaration.strip())
    if len(kept) == len(declarations):
        return value
    return ";".join(kept) or None


def _image_source(value: str) -> bool:
    """A relative path (resolved against the notebook's folder) or an inline image."""
    value = value.strip()
    if INLINE_IMAGE.match(value):
        return True
    lowered = value.lower()
    return bool(value) and not lowered.startswith("//") and ":" not in lowered.split("/")[0]


def _classes(element: str, value: str) -> bool:
    names = value.split()
    if element == "code":
        return all(CODE_CLASS.match(name) for name in names)
    if element in ("span", "div") and set(names) <= MATH_CLASS:
        return True
    return all(name.startswith("toolhost-") for name in names)


@cache
def _markdown_cleaner() -> nh3.Cleaner:
    import nh3  # on the first display, not at %load_ext

    return nh3.Cleaner(
        tags=set(MARKDOWN_TAGS),
        clean_content_tags=set(DROP_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in MARKDOWN_ATTRIBUTES.items()},
        attribute_filter=lambda tag, name, value: _attribute(tag, name, value, styles=_ALIGN),
        url_schemes={*URL_SCHEMES, "data"},
        link_rel="noopener noreferrer nofollow",
    )


@cache
def _display_cleaner() -> nh3.Cleaner:
    import nh3

    return nh3.Cleaner(
        tags=set(DISPLAY_TAGS),
        clean_content_tags=set(DROP_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in DISPLAY_ATTRIBUTES.items()},
        attribute_filter=_attribute,
        url_schemes={*URL_SCHEMES, "data"},
        link_rel="noopener noreferrer nofollow",
    )


@cache
def _markdown() -> Any:
    import mistune

    return mistune.create_markdown(escape=True, plugins=["strikethrough", "table", "math"])


def markdown_html(text: str) -> str:
    """The model's Markdown as HTML that keeps its formatting and nothing that can run."""
    return clean_markdown(str(_markdown()(text)))


def clean_markdown(html_text: str) -> str:
    """HTML from Markdown, cut down to `MARKDOWN_TAGS` and safe links and images."""
    return _markdown_cleaner().clean(html_text)


def clean_html(html_text: str) -> str:
    """A display's HTML (or the timeline's SVG) as it may leave the kernel."""
    return _display_cleaner().clean(html_text) if html_text else html_text


def display_html(html_text: str) -> str:
    """A display's ``text/html``: cleaned, kept from MathJax but for math regions whose TeX
    is safe (see `NO_MATH`)."""
    if not html_text:
        return html_text
    marked = _MATH_REGION.sub(_typeset_if_safe, clean_html(html_text))
    return f'<div class="{NO_MATH}">{marked}</div>'


def _typeset_if_safe(region: re.Match[str]) -> str:
    tag, tex = region.group(1), region.group(2)
    if _UNSAFE_TEX.search(html.unescape(tex)):
        return region.group(0)
    return f'<{tag} class="{TYPESET}">{tex}</{tag}>'


def widget_html(html_text: str) -> str:
    """The value of an ipywidgets ``HTML`` widget: the widget inserts it as markup, and a
    notebook that saves widget state shows it again on opening."""
    return display_html(html_text)


def clean_bundle(data: Mapping[str, Any]) -> dict[str, Any]:
    """A mimebundle whose markup is cleaned: ``text/html`` and ``image/svg+xml`` pass
    `clean_html`; ``text/markdown`` becomes cleaned ``text/html`` (a front end would keep the
    raw HTML in it); JavaScript is dropped."""
    cleaned: dict[str, Any] = {}
    for mime, value in data.items():
        if mime in ("application/javascript", "text/javascript"):
            continue
        if mime == "text/markdown":
            if "text/html" not in data:
                cleaned["text/html"] = markdown_html(str(value))
            continue
        if mime == "text/html" and isinstance(value, str):
            cleaned[mime] = display_html(value)
            continue
        if mime == "image/svg+xml" and isinstance(value, str):
            cleaned[mime] = clean_html(value)
            continue
        cleaned[mime] = value
    return cleaned
