"""Ranking tools for a ToolSearch query: exact selection, exact names, then BM25F.

`search_tools(query, tools)` is what ToolSearch calls. A query is either
``select:Name1,Name2`` (exact names, in the order given) or keywords. Keywords are ranked
by BM25F over the fields of each tool — its name split into words, its MCP server's name,
its `search_hint`, its description, and its parameters' names and descriptions — with
per-field weights and length normalisation. Two general aids sit on top: each query term
brings in its related words from the lexicon at a reduced weight, and a tool's score is
raised by how well the query fits its server as a whole (the query's domain). A query that
is exactly a tool's name puts that tool first; ``+word`` makes a word required in the
tool's name. Another `Ranker` (an embedding model) can replace the lexical one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.tool import Tool
from .lexicon import query_intent, related_terms
from .text import MCP_PREFIX, split_identifier, split_tool_name, stem, terms

SELECT_PREFIX = "select:"
FIELDS = ("name", "server", "hint", "lead", "description", "params")

# What a query says by its shape rather than its words: a file name, an address, a clock
# time, coordinates, or an existence question ("what ... are there" asks for a list).
_QUERY_SHAPES = (
    (re.compile(r"\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b(?!\.)"), "file"),
    (re.compile(r"\bhttps?://|\bwww\."), "url"),
    (re.compile(r"\b\d{1,2}(:\d\d)?\s?(am|pm)\b", re.IGNORECASE), "time"),
    (re.compile(r"-?\d{1,3}\.\d+\s*,\s*-?\d{1,3}\.\d+"), "latitude longitude"),
    (re.compile(r"\b(are|is) there\b", re.IGNORECASE), "list"),
    (re.compile(r"\b[A-Z]{1,3}[1-9][0-9]{0,6}(:[A-Z]{1,3}[1-9][0-9]{0,6})?\b"), "cell range"),
    (re.compile(r"(^|\s)(~|\.{1,2})?/?[\w.-]+/[\w.-]+\.[A-Za-z]\w{0,4}\b"), "path"),
)


_FILLER = frozenset(
    terms(
        "anything everything something nothing thing things stuff want need like please "
        "help quick quickly just really actually maybe right ok okay thanks"
    )
)

_URL = re.compile(r"\b(https?://|www\.)\S+")
_WORDS = re.compile(r"\S+")
NAME_WEIGHT = 0.5
"""How much a capitalised word inside a request counts (it is usually a name)."""

_SENTENCE_END = re.compile(r"[.!?](\s|$)|\n\s*\n")


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How much a match in each field counts (BM25F field boosts)."""

    name: float = 2.0
    server: float = 1.5
    hint: float = 2.0
    lead: float = 1.0
    """The description's first sentence, which says what the tool is for."""
    description: float = 0.4
    params: float = 0.6
    """Parameter names and descriptions: they name the tool's inputs, but their examples
    (values, formats) say little about what it does."""

    def of(self, key: str) -> float:
        return float(getattr(self, key))


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What a search found: tools best first, and the `select:` names that matched nothing."""

    tools: list[Tool[Any]]
    missing: list[str] = field(default_factory=list)


class Ranker(Protocol):
    """Orders tools for a keyword query, best first, leaving out tools that do not match."""

    def rank(self, query: str, tools: Sequence[Tool[Any]]) -> list[Tool[Any]]: ...


@dataclass(frozen=True, slots=True)
class _Document:
    group: str
    """The server for MCP tools; the tool's own name otherwise."""
    fields: dict[str, Counter[str]]
    lengths: dict[str, int]


def _describe(tool: Tool[Any]) -> str:
    try:
        return tool.description()
    except Exception:
        return ""


def _schema_text(tool: Tool[Any]) -> str:
    try:
        properties = tool.input_schema.get("properties") or {}
    except Exception:
        return ""
    parts: list[str] = []
    for name, spec in properties.items():
        parts.append(" ".join(split_identifier(str(name))))
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def _lead_sentence(text: str) -> tuple[str, str]:
    match = _SENTENCE_END.search(text)
    if match is None:
        return text, ""
    return text[: match.start() + 1], text[match.end() :]


def _document(tool: Tool[Any]) -> _Document:
    server, name_words = split_tool_name(tool.name)
    lead, rest = _lead_sentence(_describe(tool))
    fields = {
        "name": Counter(stem(word) for word in name_words),
        "server": Counter(terms(server or "")),
        "hint": Counter(terms(tool.search_hint or "")),
        "lead": Counter(terms(lead)),
        "description": Counter(terms(rest)),
        "params": Counter(terms(_schema_text(tool))),
    }
    lengths = {key: sum(counts.values()) for key, counts in fields.items()}
    return _Document(server or tool.name, fields, lengths)


def query_weights(query: str, *, expansion_weight: float, expand: bool = True) -> dict[str, float]:
    """The weighted terms of a query: its own words at 1, related words at the given weight.

    What a request says about the *values* to work on is left out or weighs less than what
    it says about the work: numbers (a date, a count, an id) and the words inside a URL are
    dropped (the URL's shape still counts), conversational filler too, and a capitalised
    word inside the sentence (a name: "Marco", "Denver", "Downloads") counts half, since a
    tool or product name matches through its own field anyway."""
    weights: dict[str, float] = {}
    for pattern, implied in _QUERY_SHAPES:
        if pattern.search(query):
            for term in terms(implied):
                weights[term] = 1.0
    for index, word in enumerate(_WORDS.findall(_URL.sub(" ", query))):
        weight = NAME_WEIGHT if index and word[0].isupper() and not word.isupper() else 1.0
        for term in terms(word):
            if term.isdigit() or term in _FILLER:
                continue
            weights[term] = max(weights.get(term, 0.0), weight)
    words = list(weights)
    if expand:
        lexicon = related_terms()
        for term in words:
            for other, strength in lexicon.get(term, {}).items():
                weight = expansion_weight * strength
                if weights.get(other, 0.0) < weight:
                    weights[other] = weight
    return weights


class Bm25Ranker:
    """BM25F over a tool's fields, with lexicon expansion and a server-level (domain) boost."""

    def __init__(
        self,
        *,
        weights: FieldWeights | None = None,
        k1: float = 0.9,
        b: float = 0.5,
        expansion_weight: float = 0.4,
        expand: bool = True,
        domain_weight: float = 2.0,
        intent_weight: float = 0.3,
    ) -> None:
        self.weights = weights or FieldWeights()
        self.k1 = k1
        self.b = b
        self.expansion_weight = expansion_weight
        self.expand = expand
        self.domain_weight = domain_weight
        self.intent_weight = intent_weight
        self._cache: dict[tuple[str, str, str | None], _Document] = {}

    def rank(self, query: str, tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
        scores = self.scores(query, tools)
        order = sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i].name))
        return [tools[i] for i in order if scores[i] > 0]

    def scores(self, query: str, tools: Sequence[Tool[Any]]) -> list[float]:
        """One score per tool, in the order given; 0 means the tool does not match at all."""
        docs = [self._doc(tool) for tool in tools]
        if not docs:
            return []
        weights = query_weights(query, expansion_weight=self.expansion_weight, expand=self.expand)
        scores = self._bm25f(weights, [doc.fields for doc in docs])
        if self.domain_weight and len({doc.group for doc in docs}) > 1:
            groups = _merge_groups(docs)
            names = list(groups)
            group_scores = dict(
                zip(names, self._bm25f(weights, [groups[n] for n in names]), strict=True)
            )
            best = max(group_scores.values())
            if best > 0:
                scores = [
                    score * (1 + self.domain_weight * group_scores[doc.group] / best)
                    for score, doc in zip(scores, docs, strict=True)
                ]
        intent = query_intent(query) if self.intent_weight else None
        if intent is not None:
            wants_read = intent == "read"
            scores = [
                score * (1 + self.intent_weight) if _reads_only(tool) == wants_read else score
                for score, tool in zip(scores, tools, strict=True)
            ]
        return scores

    def _bm25f(
        self, weights: dict[str, float], documents: Sequence[dict[str, Counter[str]]]
    ) -> list[float]:
        total = len(documents)
        lengths = [{key: sum(c.values()) for key, c in doc.items()} for doc in documents]
        averages = {key: max(1.0, sum(length[key] for length in lengths) / total) for key in FIELDS}
        frequency: Counter[str] = Counter()
        for doc in documents:
            frequency.update({term for counts in doc.values() for term in counts})
        scores = [0.0] * total
        for term, query_weight in weights.items():
            containing = frequency.get(term, 0)
            if not containing:
                continue
            idf = math.log(1 + (total - containing + 0.5) / (containing + 0.5))
            for index, doc in enumerate(documents):
                tf = 0.0
                for key, counts in doc.items():
                    count = counts.get(term, 0)
                    if count:
                        norm = 1 - self.b + self.b * lengths[index][key] / averages[key]
                        tf += self.weights.of(key) * count / norm
                if tf:
                    scores[index] += query_weight * idf * tf / (self.k1 + tf)
        return scores

    def _doc(self, tool: Tool[Any]) -> _Document:
        key = (tool.name, _describe(tool), tool.search_hint)
        doc = self._cache.get(key)
        if doc is None:
            doc = self._cache[key] = _document(tool)
        return doc


def _reads_only(tool: Tool[Any]) -> bool:
    """Whether the tool declares itself read-only for any input (predicates of the input
    that cannot answer without one count as not read-only)."""
    return tool.flag(tool.is_read_only, None)


def _merge_groups(docs: Iterable[_Document]) -> dict[str, dict[str, Counter[str]]]:
    """One bag of words per server: every field of all its tools' documents added up."""
    groups: dict[str, dict[str, Counter[str]]] = {}
    for doc in docs:
        merged = groups.setdefault(doc.group, {key: Counter() for key in FIELDS})
        for key, counts in doc.fields.items():
            merged[key].update(counts)
    return groups


DEFAULT_RANKER = Bm25Ranker()


def parse_select(query: str) -> list[str] | None:
    """The names of a ``select:A,B`` query, or None when the query is keywords."""
    text = query.strip()
    if not text.lower().startswith(SELECT_PREFIX):
        return None
    return [name.strip() for name in text[len(SELECT_PREFIX) :].split(",") if name.strip()]


def _exact(query: str, tools: Sequence[Tool[Any]]) -> Tool[Any] | None:
    wanted = query.strip().lower()
    for tool in tools:
        bare = tool.name.rsplit("__", 1)[-1] if tool.name.startswith(MCP_PREFIX) else tool.name
        if wanted in (tool.name.lower(), bare.lower()):
            return tool
    return None


def _name_terms(tool: Tool[Any]) -> set[str]:
    server, words = split_tool_name(tool.name)
    return {stem(word) for word in words} | set(terms(server or ""))


def search_tools(
    query: str,
    tools: Sequence[Tool[Any]],
    *,
    max_results: int = 5,
    ranker: Ranker | None = None,
) -> SearchResult:
    """Find at most `max_results` tools for a ToolSearch query, best first."""
    selected = parse_select(query)
    if selected is not None:
        by_name = {tool.name: tool for tool in tools}
        found = [by_name[name] for name in dict.fromkeys(selected) if name in by_name]
        missing = [name for name in selected if name not in by_name]
        return SearchResult(found[:max_results], missing)

    words = query.split()
    required = {stem(word[1:].lower()) for word in words if word.startswith("+") and len(word) > 1}
    keywords = " ".join(word.lstrip("+") for word in words)
    candidates = [t for t in tools if required <= _name_terms(t)] if required else list(tools)
    ranked = (ranker or DEFAULT_RANKER).rank(keywords, candidates)
    exact = _exact(keywords, candidates)
    if exact is not None:
        ranked = [exact, *(tool for tool in ranked if tool is not exact)]
    return SearchResult(ranked[:max_results])
