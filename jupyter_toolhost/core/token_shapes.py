"""Well-known token formats, found in text without trying a regex at every position.

Each `Shape` is a compiled pattern with the literals it must contain (Anthropic's
``sk-ant-``, GitHub's ``ghp_``, a PEM block's ``-----BEGIN ``, ...): the pattern is tried
only where one occurs, so ordinary output costs a few substring searches. Shapes need a
boundary before them, so a token-like run inside base64 (an inline image) is not one.
Sources for the formats are the issuers' own documentation of their token prefixes.
Used by `redaction`, which also redacts the session's own secrets by value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MODEL_CREDENTIAL_NAMES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "KERNEL_ANTHROPIC_API_KEY",
    "CLAUDE_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
"""Where the model client finds its credentials: always redacted by name."""

_CREDENTIAL_PARTS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PAT",
        "CREDENTIAL",
        "CREDENTIALS",
    }
)
"""A variable whose name has one of these as an ``_``-separated part holds a credential."""

_BOUNDARY = r"(?<![A-Za-z0-9_+/.-])"
"""No token character right before a shape: a run inside base64 or a longer word is not one."""
_END = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class Shape:
    """A token format, redacted where `pattern` matches: its group `group` (0: all of it;
    names: the first of those groups that matched).

    `pattern` is only tried where one of `literals` occurs (found by a substring search,
    in the lower-cased text when `folded`): at the literal itself, or, with `back`, at the
    start of the run of `back` characters that ends there (a variable's name before
    ``_TOKEN``, a URL's scheme before ``://``). `check`, when set, must accept the match.
    """

    label: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int | tuple[str, ...] = 0
    folded: bool = False
    back: frozenset[str] = frozenset()
    check: Callable[[re.Match[str]], bool] | None = None
    finder: re.Pattern[str] | None = None
    """Where to try `pattern`, when a literal is too common to try it at each one: the
    starts of this pattern's matches in the haystack (found in C, not one by one)."""


def _shape(
    label: str,
    literals: Iterable[str],
    pattern: str,
    *,
    group: int | tuple[str, ...] = 0,
    flags: int = 0,
    back: str = "",
    check: Callable[[re.Match[str]], bool] | None = None,
    finder: str | None = None,
) -> Shape:
    folded = bool(flags & re.IGNORECASE)
    compiled = re.compile(pattern, flags)
    found = re.compile(finder) if finder is not None else None
    return Shape(label, tuple(literals), compiled, group, folded, frozenset(back), check, found)


_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_QUOTED_NAME = re.compile(
    r"[A-Za-z0-9_.-]*?(?:api[_-]?key|apikey|secret[_-]?key|secret[_-]?access[_-]?key|"
    r"client[_-]?secret|secret|password|passwd|private[_-]?key|access[_-]?key|"
    r"signing[_-]?key|encryption[_-]?key|[a-z0-9]+[_-]token|auth[_-]?token|credentials?)",
    re.IGNORECASE,
)
"""Names whose quoted value is a credential (``"api_key": "..."``): not a bare ``token`` or
``key``, which data uses for other things (a tokenizer's tokens, a dict's keys)."""


def _is_assignment(found: re.Match[str]) -> bool:
    name = found.group("name")
    if found.group("quoted") is not None:
        return _QUOTED_NAME.fullmatch(name) is not None
    # NAME=value (a .env file, `env` output): at a line's start or after `export `/space.
    text, start = found.string, found.start()
    before = text[text.rfind("\n", 0, start) + 1 : start]
    return before.strip() in ("", "export") and is_credential_name(name.replace("-", "_"))


SHAPES: tuple[Shape, ...] = (
    _shape(
        "private key",
        ["-----BEGIN "],
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)",
    ),
    _shape("Anthropic key", ["sk-ant-"], _BOUNDARY + r"sk-ant-[A-Za-z0-9_-]{16,}"),
    _shape(
        "OpenAI key",
        ["sk-"],
        _BOUNDARY
        + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{16,}|[A-Za-z0-9]{32,}"
        + _END
        + ")",
    ),
    _shape(
        "GitHub token",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        _BOUNDARY + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    _shape("GitLab token", ["glpat-"], _BOUNDARY + r"glpat-[A-Za-z0-9_-]{20,}"),
    _shape(
        "AWS access key id",
        ["AKIA", "ASIA", "ABIA", "ACCA"],
        _BOUNDARY + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    _shape("Slack token", ["xox"], _BOUNDARY + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _shape(
        "Slack webhook",
        ["https://hooks.slack.com/"],
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+",
    ),
    _shape("Google API key", ["AIza"], _BOUNDARY + r"AIza[0-9A-Za-z_-]{35}" + _END),
    _shape(
        "Stripe key",
        ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        _BOUNDARY + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    _shape("Hugging Face token", ["hf_"], _BOUNDARY + r"hf_[A-Za-z0-9]{30,}"),
    _shape("npm token", ["npm_"], _BOUNDARY + r"npm_[A-Za-z0-9]{36}" + _END),
    _shape("PyPI token", ["pypi-AgE"], _BOUNDARY + r"pypi-AgE[A-Za-z0-9_-]{40,}"),
    _shape(
        "JSON Web Token",
        ["eyJ"],
        _BOUNDARY + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    _shape(
        "password in a URL",
        ["://"],
        r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\"<>]+:([^\s:/@'\"<>]{3,})@",
        group=1,
        back="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-",
    ),
    _shape(
        "authorization header",
        ["authorization", "api-key", "auth-token"],
        r"(?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token)[\"']?\s*[:=]\s*[\"']?"
        r"(?:(?:bearer|basic|token|bot)\s+)?([A-Za-z0-9._~+/=-]{8,})",
        group=1,
        flags=re.IGNORECASE,
        back="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-",
    ),
    _shape(
        "credential",
        ["key", "token", "secret", "pass", "credential"],
        r"(?P<name>[A-Za-z0-9_.-]+)(?:[\"']?[ \t]*[:=][ \t]*[\"'](?P<quoted>[^\"'\s]{8,})[\"']"
        r"|=(?P<plain>[^\s\"'#;&|]{8,}))",
        group=("quoted", "plain"),
        flags=re.IGNORECASE,
        back=_NAME_CHARS,
        check=_is_assignment,
        # A credential word right before `=` or `:` and a value of 8 or more characters:
        # "key" alone is in every other log line, this is in few.
        finder=r"(?:key|token|secret|pass|credential)[a-z0-9_.-]*[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"[^\s\"'#;&|]{8}",
    ),
)


def marker(label: str) -> str:
    """What a redacted value is replaced by."""
    return f"[redacted: {label}]"


def is_credential_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return name in MODEL_CREDENTIAL_NAMES or any(
        part in _CREDENTIAL_PARTS for part in name.upper().split("_")
    )


def matches(text: str, haystack: str, shape: Shape) -> Iterable[tuple[int, int, str]]:
    """The spans `shape` redacts in `text`, each with its marker."""
    shown = marker(shape.label)
    if not any(literal in haystack for literal in shape.literals):
        return
    for at in _candidates(haystack, shape):
        start = at
        if shape.back:
            while start > 0 and at - start < 128 and text[start - 1] in shape.back:
                start -= 1
        found = shape.pattern.match(text, start)
        if found is not None and (shape.check is None or shape.check(found)):
            begin, end = _span(found, shape.group)
            if begin >= 0 and not text.startswith("[redacted", begin):
                yield begin, end, shown


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def ascii_lower(text: str) -> str:
    """`text` lower-cased in ASCII only, so that every position stays where it was
    (`str.lower` makes some characters longer: "İ" becomes two)."""
    folded = text.lower()
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


def _span(found: re.Match[str], group: int | tuple[str, ...]) -> tuple[int, int]:
    if isinstance(group, int):
        return found.span(group)
    return next((found.span(g) for g in group if found.group(g) is not None), (-1, -1))


def _candidates(haystack: str, shape: Shape) -> Iterable[int]:
    """Where `shape` may start: its finder's matches, or each of its literals."""
    if shape.finder is not None:
        yield from (found.start() for found in shape.finder.finditer(haystack))
        return
    for literal in shape.literals:
        at = haystack.find(literal)
        while at >= 0:
            yield at
            at = haystack.find(literal, at + 1)


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    last = 0
    for begin, end, shown in sorted(set(spans)):
        if begin < last:
            continue
        parts += [text[last:begin], shown]
        last = end
    parts.append(text[last:])
    return "".join(parts)
