"""Fixtures shared by several test modules.

`server` and `kernel`: one scripted loopback Messages API server and one real IPython kernel
pointed at it, shared by a module (modules that need something else define their own).
`browser`: Debian's Chromium driven by Playwright, shared by a module; `lab_browser` is
imported only when a test asks for it, so modules without browser tests need neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.testing import MessagesServer


@pytest.fixture(scope="module")
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as running:
        yield running


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    running = agent_kernel(tmp_path_factory.mktemp("kernel"), server.base_url)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from lab_browser import CHROMIUM_FLAGS, require_browser

    chromium, sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()
