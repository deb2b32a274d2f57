"""The failure every request check raises: what the real API answers with a 400.

A module of its own so that the checks in `limits` and `thinking` and the `validation` that
runs them all can raise it without importing each other back.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import ToolhostError


@dataclass(eq=False)
class InvalidRequest(ToolhostError):
    """A request the real API would answer with 400 `invalid_request_error`."""

    message: str
    error_code: str | None = None

    def __str__(self) -> str:
        return self.message
