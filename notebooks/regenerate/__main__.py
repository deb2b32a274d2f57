"""Rebuild the notebooks: ``python notebooks/regenerate [NAME ...]`` (e.g. ``01``).

For each notebook: write its cells, record its cassette against the scripted loopback
server, run it offline from the cassette and save the sanitized outputs. Then check with
``pytest --nbval notebooks/``.
"""

from __future__ import annotations

import sys

from common import build
from specs import SPECS


def main(argv: list[str]) -> int:
    chosen = [s for s in SPECS if not argv or any(s.name.startswith(a) for a in argv)]
    if not chosen:
        print(f"no notebook matches {argv}; known: {[s.name for s in SPECS]}")
        return 2
    for spec in chosen:
        print(f"building {spec.name} ...", flush=True)
        print(f"  saved {build(spec)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
