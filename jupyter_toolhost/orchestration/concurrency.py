"""How many calls run at once, and the worker threads sync tools run on.

The cap is `JUPYTER_TOOLHOST_MAX_TOOL_USE_CONCURRENCY` (default 10). It bounds the calls one
message runs at once, and it sizes the thread pool sync tool functions run on (asyncio's
default executor has only `cpu_count + 4` threads, so on a small machine it would queue calls
the orchestrator already let start). The pool is shared by the whole process; a sync call
that does not stop when told keeps its thread until it returns.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

CONCURRENCY_ENV = "JUPYTER_TOOLHOST_MAX_TOOL_USE_CONCURRENCY"
DEFAULT_MAX_CONCURRENCY = 10

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def max_tool_use_concurrency() -> int:
    """How many calls may execute at once: the environment's setting, else 10."""
    raw = os.environ.get(CONCURRENCY_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_CONCURRENCY
    return value if value > 0 else DEFAULT_MAX_CONCURRENCY


def sync_tool_pool() -> ThreadPoolExecutor:
    """The threads sync tool functions run on: as many as the current concurrency cap."""
    cap = max_tool_use_concurrency()
    with _pools_lock:
        pool = _pools.get(cap)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=cap, thread_name_prefix=f"toolhost-tool-{cap}")
            _pools[cap] = pool
        return pool
