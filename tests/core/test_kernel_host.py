"""The key's path to a remote kernel: the no-key message names the kernel's host when the
kernel was started through a gateway, and a key sent as `KERNEL_ANTHROPIC_API_KEY` (the
name gateways pass on) is used. Real kernels started as a gateway starts them (only
`KERNEL_*` variables, no `JPY_SESSION_NAME`); tests/jupyter/test_gateway.py runs a real gateway.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from kernel_helpers import Kernel

from jupyter_toolhost.core.kernel_host import kernel_api_key, remote_kernel_hint, remote_signs
from jupyter_toolhost.testing import MessagesServer, Turn, text


def test_remote_signs_and_the_hint() -> None:
    assert remote_signs({"JPY_SESSION_NAME": "/nb.ipynb", "KERNEL_WORKING_DIR": "/x"}) == []
    assert remote_signs({}) == []
    assert remote_signs({"KERNEL_WORKING_DIR": "/x", "KERNEL_ID": "k"}) == [
        "KERNEL_WORKING_DIR",
        "KERNEL_ID",
    ]
    assert remote_kernel_hint({}) is None
    hint = remote_kernel_hint({"KERNEL_WORKING_DIR": "/x"}, host="gpu-07")
    assert hint is not None and hint.startswith("This kernel runs on gpu-07, started through")
    assert "KG_ENV_PROCESS_WHITELIST" in hint and "KERNEL_ANTHROPIC_API_KEY" in hint


def test_the_kernel_named_key_is_used_only_without_the_plain_one() -> None:
    assert kernel_api_key({"KERNEL_ANTHROPIC_API_KEY": "k"}) == "k"
    assert kernel_api_key({"KERNEL_ANTHROPIC_API_KEY": "k", "ANTHROPIC_API_KEY": "a"}) is None
    assert kernel_api_key({}) is None


DROP_KEYS = (
    "import os\nfor name in ('ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'):\n"
    "    os.environ.pop(name, None)"
)
"""The test harness starts kernels with its own environment under the given one: the
gateway would not pass these, so they go before the extension loads."""


def _gateway_like_env(**extra: str) -> dict[str, str]:
    """The kernel's environment as a gateway builds it: no key, no JPY_SESSION_NAME."""
    dropped = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "JPY_SESSION_NAME")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, **extra}


@pytest.mark.timeout(120)
def test_a_remote_kernel_without_a_key_names_its_host(tmp_path: Path) -> None:
    env = _gateway_like_env(KERNEL_WORKING_DIR="/home/someone/project", HOME=str(tmp_path))
    kernel = Kernel(tmp_path, env)
    try:
        kernel.run(DROP_KEYS)
        assert kernel.run("%load_ext jupyter_toolhost").status == "ok"
        run = kernel.run("%%agent --mode dontAsk\nhello")
        shown = run.text()
        assert "No Anthropic API key" in shown
        assert f"This kernel runs on {socket.gethostname()}" in shown
        assert "KERNEL_WORKING_DIR set" in shown
    finally:
        kernel.close()


@pytest.mark.timeout(120)
def test_a_key_under_its_kernel_name_reaches_the_api(tmp_path: Path) -> None:
    with MessagesServer([Turn([text("hello from the loopback API")])]) as server:
        env = _gateway_like_env(
            KERNEL_ANTHROPIC_API_KEY="sk-through-the-gateway",
            ANTHROPIC_BASE_URL=server.base_url,
            KERNEL_WORKING_DIR=str(tmp_path),
            HOME=str(tmp_path),
        )
        kernel = Kernel(tmp_path, env)
        try:
            kernel.run(DROP_KEYS)
            assert kernel.run("%load_ext jupyter_toolhost").status == "ok"
            run = kernel.run("%%agent --mode dontAsk\nhello")
            assert "hello from the loopback API" in run.text(), run.text()
        finally:
            kernel.close()
    [request] = [r for r in server.requests if r.path == "/v1/messages"]
    assert request.api_key == "sk-through-the-gateway"
