"""Public XSS payloads, read at test time from the `brs-kb` package (MIT; "XSS Knowledge
Base", about 4,900 payloads in some 150 contexts: HTML, attributes, URLs, SVG, CSS, Markdown,
templates, frameworks, WAF bypasses). Nothing of it is copied into this repository.

`payloads()` is every payload; `sample(n)` a deterministic selection for the browser, which
takes every context's payloads in turn (so each kind is in it) until it has `n`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

import pytest


@dataclass(frozen=True, slots=True)
class Payload:
    name: str
    text: str
    context: str


@cache
def payloads() -> tuple[Payload, ...]:
    """Every payload of the installed `brs-kb`, sorted by name (the test extra installs it;
    under CI=true a missing package fails the run)."""
    if os.environ.get("CI"):
        from brs_kb import payloads as database
    else:
        database = pytest.importorskip("brs_kb.payloads", reason="pip install brs-kb")
    entries = database.get_all_payloads()
    found = [
        Payload(name, entry.payload, (entry.contexts or ["none"])[0])
        for name, entry in entries.items()
        if isinstance(entry.payload, str) and entry.payload.strip()
    ]
    assert len(found) > 4000, f"brs-kb shipped only {len(found)} payloads"
    return tuple(sorted(found, key=lambda p: p.name))


def contexts() -> set[str]:
    return {p.context for p in payloads()}


def sample(count: int) -> list[Payload]:
    """`count` payloads: round-robin over the contexts (sorted), each context's payloads in
    name order, so every context is in it once `count` is at least their number."""
    by_context: dict[str, list[Payload]] = {}
    for payload in payloads():
        by_context.setdefault(payload.context, []).append(payload)
    queues = [by_context[c] for c in sorted(by_context)]
    chosen: list[Payload] = []
    depth = 0
    while len(chosen) < count and any(depth < len(q) for q in queues):
        chosen += [q[depth] for q in queues if depth < len(q)][: count - len(chosen)]
        depth += 1
    return chosen


NORMAL_ANSWER = """## Results

| class | mean |
| --- | ---: |
| A | 84.7 |

```python
df.groupby("class").mean()
```

- one, see [the docs](https://pandas.pydata.org/docs/)
- two, **bold** and `code`
"""
"""A Markdown answer a person expects formatted (a heading, a table, code, a link, a list,
bold): whatever the sanitiser removes, this must still render."""
