"""The query file of `benchmarks/bench_tool_search.py` is well formed (no network needed)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from benchmarks.bench_tool_search import load_queries, split_of
from benchmarks.mcp_catalog import SERVERS

QUERY_FILE = Path(__file__).resolve().parents[2] / "benchmarks/data/tool_search_queries.json"
TOOL_NAME = re.compile(r"^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__([A-Za-z0-9_-]+)$")


def rule(query: str) -> str:
    """The split rule the file documents, written out here independently."""
    return "heldout" if int(hashlib.sha256(query.encode("utf-8")).hexdigest(), 16) % 2 else "tune"


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(QUERY_FILE.read_text(encoding="utf-8"))


def test_header(data: dict) -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["written"])
    assert "sha256" in data["split_rule"] and "% 2" in data["split_rule"]
    assert sorted(data["servers"]) == sorted(s.name for s in SERVERS)


def test_at_least_150_distinct_queries(data: dict) -> None:
    texts = [q["query"] for q in data["queries"]]
    assert len(texts) >= 150
    assert len(set(texts)) == len(texts)
    assert len({" ".join(t.lower().split()) for t in texts}) == len(texts)


def test_each_query_is_well_formed(data: dict) -> None:
    servers = {s.name for s in SERVERS}
    for q in data["queries"]:
        assert set(q) == {"query", "expected", "split"}, q
        assert isinstance(q["query"], str) and q["query"].strip(), q
        assert isinstance(q["expected"], list) and q["expected"], q
        assert len(set(q["expected"])) == len(q["expected"]), q
        for name in q["expected"]:
            match = TOOL_NAME.match(name)
            assert match, f"{name!r} is not mcp__<server>__<tool>"
            assert match.group(1) in servers, f"{name!r}: server not in the benchmark's list"


def test_split_follows_the_documented_rule(data: dict) -> None:
    for q in data["queries"]:
        assert q["split"] == rule(q["query"]), q["query"]


def test_split_is_roughly_half(data: dict) -> None:
    heldout = sum(q["split"] == "heldout" for q in data["queries"])
    assert 0.4 <= heldout / len(data["queries"]) <= 0.6


def test_the_benchmark_uses_the_same_rule(data: dict) -> None:
    assert all(split_of(q["query"]) == q["split"] for q in data["queries"])
    assert len(load_queries()) == len(data["queries"])


def test_every_server_has_queries(data: dict) -> None:
    named = {n.split("__")[1] for q in data["queries"] for n in q["expected"]}
    assert named == {s.name for s in SERVERS}
