"""Where the kernel runs, for messages that must say so: is it remote, and on which host.

A kernel behind Jupyter Kernel Gateway or Enterprise Gateway gets only the variables the
gateway lets through: those whose names start with ``KERNEL_`` from the request that started
it (Jupyter Server's gateway client sends ``KERNEL_WORKING_DIR``, and forwards every
``KERNEL_*`` variable of its own environment and those in its ``allowed_envs``), and
those of the gateway's own environment it was told to pass (``KG_ENV_PROCESS_WHITELIST``,
``EG_ENV_PROCESS_WHITELIST``). A key set for the Jupyter server, or in the browser's
machine's shell, never arrives; the message about a missing key has to say where the kernel
runs. So that a key can travel the ``KERNEL_`` way, ``KERNEL_ANTHROPIC_API_KEY`` is read when
``ANTHROPIC_API_KEY`` is not set.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

__all__ = ["KERNEL_KEY_ENV", "kernel_api_key", "remote_kernel_hint", "remote_signs"]

KERNEL_KEY_ENV = "KERNEL_ANTHROPIC_API_KEY"
"""The key under a ``KERNEL_`` name, which gateways pass on to the kernels they start."""

_GATEWAY_SIGNS = ("KERNEL_WORKING_DIR", "KERNEL_USERNAME", "KERNEL_ID", "KERNEL_LAUNCH_TIMEOUT")


def kernel_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    """`KERNEL_ANTHROPIC_API_KEY` when `ANTHROPIC_API_KEY` is not set, else None."""
    env = os.environ if environ is None else environ
    if env.get("ANTHROPIC_API_KEY"):
        return None
    return env.get(KERNEL_KEY_ENV) or None


def remote_signs(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables that show this kernel was started through a gateway (empty: it was not,
    as far as anything tells). A kernel a local Jupyter server started has
    ``JPY_SESSION_NAME``; one behind a gateway has ``KERNEL_*`` variables instead."""
    env = os.environ if environ is None else environ
    if env.get("JPY_SESSION_NAME"):
        return []
    return [name for name in _GATEWAY_SIGNS if env.get(name)]


def remote_kernel_hint(
    environ: Mapping[str, str] | None = None, *, host: str | None = None
) -> str | None:
    """One sentence naming the kernel's host when the kernel is remote, for the message
    about a missing key (None for a local kernel)."""
    signs = remote_signs(environ)
    if not signs:
        return None
    where = host or socket.gethostname()
    return (
        f"This kernel runs on {where}, started through a gateway ({', '.join(signs)} set): "
        "the key must reach the kernel there, as ANTHROPIC_API_KEY in the gateway's "
        "environment listed in KG_ENV_PROCESS_WHITELIST (EG_ENV_PROCESS_WHITELIST for "
        f"Enterprise Gateway), or as {KERNEL_KEY_ENV} in the Jupyter server's environment "
        "(a JupyterHub spawner's environment, for example), which the gateway passes on."
    )
