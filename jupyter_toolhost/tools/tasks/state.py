"""Session-wide objects kept in the app state's `extras`, created once and shared.

`AppState` is replaced whole, never mutated; a live object (a registry of running tasks, a
scheduler) is put into `extras` once, atomically, and every later call gets the same one.
Subagents share their parent's app state store, so they share these objects too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from ...core.context import AppState, ToolUseContext

T = TypeVar("T")


def shared(context: ToolUseContext, key: str, factory: Callable[[], T]) -> T:
    """The object under `extras[key]`, made by `factory()` the first time it is asked for."""
    found = context.get_app_state().extras.get(key)
    if found is not None:
        return found

    def add(state: AppState) -> AppState:
        if state.extras.get(key) is not None:
            return state
        return replace(state, extras={**state.extras, key: factory()})

    return context.set_app_state(add).extras[key]


def set_extra(context: ToolUseContext, key: str, value: Any) -> None:
    """Replace `extras[key]` (None removes it), atomically."""

    def put(state: AppState) -> AppState:
        extras = {k: v for k, v in state.extras.items() if k != key}
        if value is not None:
            extras[key] = value
        return replace(state, extras=extras)

    context.set_app_state(put)


def env_flag(name: str) -> bool:
    """Whether an environment setting is switched on (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}
