"""The attack corpus once more with the Bash sandbox off: the command check must hold alone.

The same cases and assertions as `test_permissions_attacks.py` (imported, not copied), with
``JUPYTER_TOOLHOST_BASH_SANDBOX=0`` set for this module before its worker processes start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from test_permissions_attacks import (
    outcomes,
    test_attack_is_blocked_in_every_mode,
    test_control_is_at_least_as_permissive_as_the_baseline,
)

from jupyter_toolhost.tools.bash.sandbox import SANDBOX_ENV

__all__ = [
    "outcomes",
    "test_attack_is_blocked_in_every_mode",
    "test_control_is_at_least_as_permissive_as_the_baseline",
]


@pytest.fixture(scope="module", autouse=True)
def sandbox_off() -> Iterator[None]:
    """Set before `outcomes` (autouse fixtures of a scope come first) and put back after."""
    saved = os.environ.get(SANDBOX_ENV)
    os.environ[SANDBOX_ENV] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(SANDBOX_ENV, None)
        else:
            os.environ[SANDBOX_ENV] = saved


def test_the_sandbox_is_off_for_this_module() -> None:
    assert os.environ[SANDBOX_ENV] == "0"
