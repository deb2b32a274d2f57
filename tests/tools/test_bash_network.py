"""The sandbox's network allow-list, with real bubblewrap, a real proxy and real clients.

A loopback HTTP server plays the outside world: a file, a package index (PEP 503) with a
wheel made here, and a git repository over dumb HTTP. `curl`, `pip download` and `git clone`
run inside the sandbox, allowed and refused; so do the ways around the proxy (ignoring the
proxy variables, speaking to the proxy's socket directly, other spellings of the loopback,
a denied entry beside an allowed one). The entries' grammar is explored by hypothesis.
Under ``CI=true`` a missing bwrap, curl or git fails these tests instead of skipping them.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.server
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_bash_sandbox import make_context, run, text

from jupyter_toolhost.tools.bash import sandbox
from jupyter_toolhost.tools.bash.network import Entry, NetworkPolicy

PACKAGE = "tinypkg"


@pytest.fixture
def tools() -> None:
    problem = sandbox.bwrap_problem()[1]
    missing = [name for name in ("curl", "git") if shutil.which(name) is None]
    reason = problem or (f"{', '.join(missing)} not installed" if missing else None)
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs bubblewrap, curl and git for the network tests: {reason}")
        pytest.skip(reason)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    monkeypatch.delenv(sandbox.NETWORK_ENV, raising=False)
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    return folder


def _wheel() -> bytes:
    """A real, minimal wheel of `PACKAGE` 1.0."""
    files = {
        f"{PACKAGE}/__init__.py": "VALUE = 42\n",
        f"{PACKAGE}-1.0.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n"
        ),
        f"{PACKAGE}-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [f"{name},," for name in files] + [f"{PACKAGE}-1.0.dist-info/RECORD,,"]
    files[f"{PACKAGE}-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[int]:
    """The port of a loopback server holding a file, an index and a git repository."""
    root = tmp_path / "served"
    root.mkdir()
    (root / "hello.txt").write_text("hello from outside\n")
    wheel = _wheel()
    name = f"{PACKAGE}-1.0-py3-none-any.whl"
    (root / "files").mkdir()
    (root / "files" / name).write_bytes(wheel)
    digest = hashlib.sha256(wheel).hexdigest()
    (root / "simple" / PACKAGE).mkdir(parents=True)
    (root / "simple" / PACKAGE / "index.html").write_text(
        f'<html><body><a href="../../files/{name}#sha256={digest}">{name}</a></body></html>\n'
    )
    source = tmp_path / "source"
    source.mkdir()
    git = [
        "git",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.org",
        "-c",
        "init.defaultBranch=main",
    ]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    (source / "README").write_text("cloned through the proxy\n")
    subprocess.run([*git, "-C", str(source), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "one"], check=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(root / "repo.git")], check=True
    )
    subprocess.run(["git", "-C", str(root / "repo.git"), "update-server-info"], check=True)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(autouse=True)
def own_temp_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Each test's channels in a temp folder of its own (short: a socket path has a limit),
    so `channels()` counts this test's and not those of a lab kernel or another run that
    uses the sandbox's network at the same time. (`tmp_path` first: pytest's own temp
    folders are made before the switch.)"""
    folder = tempfile.mkdtemp(prefix="thn-")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def channels() -> set[str]:
    folder = tempfile.gettempdir()
    return {name for name in os.listdir(folder) if name.startswith("toolhost-net-")}


async def test_allowed_by_address_curl_pip_and_git_reach_it(
    tools: None, home: Path, tmp_path: Path, outside: int
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=(f"127.0.0.1:{outside}",))
    before = channels()
    fetched = await run(context, f"curl -sS http://127.0.0.1:{outside}/hello.txt")
    assert text(fetched) == "hello from outside", text(fetched)
    index = f"http://127.0.0.1:{outside}/simple"
    pip = f"{sys.executable} -m pip download --no-deps --no-cache-dir --index-url {index}"
    pip += f" -d dl {PACKAGE}"
    downloaded = await run(context, pip)
    assert not downloaded.is_error, text(downloaded)
    assert (work / "dl" / f"{PACKAGE}-1.0-py3-none-any.whl").is_file()
    cloned = await run(context, f"git clone -q http://127.0.0.1:{outside}/repo.git copy")
    assert not cloned.is_error, text(cloned)
    assert (work / "copy" / "README").read_text() == "cloned through the proxy\n"
    assert channels() == before  # every command's channel is gone when it ends


async def test_a_host_not_allowed_is_refused_and_the_model_is_told_which_setting(
    tools: None, home: Path, tmp_path: Path, outside: int
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=("pypi.org", "*.pythonhosted.org"))
    result = await run(context, f"curl -sS --noproxy '' http://127.0.0.1:{outside}/hello.txt")
    assert "hello from outside" not in text(result)  # curl shows the proxy's 403 body
    assert f"127.0.0.1:{outside}: it is not in sandbox.network.allowedDomains" in text(result)
    assert f"add '127.0.0.1:{outside}'" in text(result)
    https = await run(context, "curl -sS https://example.com/")
    assert "example.com:443: it is not in sandbox.network.allowedDomains" in text(https)
    pip = f"{sys.executable} -m pip download --no-deps --no-cache-dir --retries 0 --timeout 5"
    pip += f" --index-url https://files.example.test/simple -d dl {PACKAGE}"
    downloaded = await run(context, pip)
    assert downloaded.is_error and not list((work / "dl").glob("*.whl"))  # pip makes dl/
    assert "files.example.test:443: it is not in sandbox.network.allowedDomains" in text(downloaded)
    cloned = await run(context, "git clone -q https://example.org/repo.git copy")
    assert cloned.is_error and "example.org:443" in text(cloned)
    assert not (work / "copy").exists()


@pytest.mark.parametrize(
    "command",
    [
        "curl -sS --noproxy '*' http://127.0.0.1:{port}/hello.txt",  # the variables ignored
        "curl -sS --noproxy '*' http://[::1]:{port}/hello.txt",
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port})); "
        "s.sendall(b'GET /hello.txt HTTP/1.0\\r\\n\\r\\n'); print(s.recv(999))\"",
        "curl -sS --noproxy '' http://0x7f000001:{port}/hello.txt",  # the loopback respelt
        "curl -sS --noproxy '' http://2130706433:{port}/hello.txt",
        "curl -sS --noproxy '' http://localhost.:{port}/hello.txt",
        "curl -sS --noproxy '' http://[::ffff:127.0.0.1]:{port}/hello.txt",
        "curl -sS -x http://127.0.0.1:1 http://127.0.0.1:{port}/hello.txt",  # another proxy
        # the proxy's socket spoken to directly, with a request it must refuse
        'python3 -c "import glob, socket, tempfile; s=socket.socket(socket.AF_UNIX); '
        "s.connect(glob.glob(tempfile.gettempdir()+'/toolhost-net-*/proxy.sock')[0]); "
        "s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n'); print(s.recv(999))\"",
    ],
)
async def test_no_way_around_the_proxy(
    tools: None, home: Path, tmp_path: Path, outside: int, command: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=("pypi.org", "*"))
    result = await run(context, command.format(port=outside))
    assert "hello from outside" not in text(result), text(result)


async def test_a_denied_entry_wins_over_an_allowed_one(
    tools: None, home: Path, tmp_path: Path, outside: int
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(
        work, allowed_domains=("127.0.0.1",), denied_domains=(f"localhost:{outside}",)
    )
    result = await run(context, f"curl -sS http://127.0.0.1:{outside}/hello.txt")
    assert "hello from outside" not in text(result)
    assert "sandbox.network.deniedDomains names it" in text(result)


async def test_a_name_allowed_that_resolves_to_a_private_address_is_refused(
    tools: None, home: Path, tmp_path: Path, outside: int
) -> None:
    """The machine's own name resolves (through /etc/hosts) to one of its addresses, which
    is not public: allowing the name does not open the address."""
    name = socket.gethostname()
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=(name,))
    result = await run(context, f"curl -sS http://{name}:{outside}/hello.txt")
    assert "hello from outside" not in text(result)
    assert f"{name}:{outside}" in text(result)
    assert "address, which the proxy reaches only when" in text(result), text(result)


async def test_background_commands_use_the_proxy_and_close_their_channel(
    tools: None, home: Path, tmp_path: Path, outside: int
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=(f"127.0.0.1:{outside}",))
    before = channels()
    command = f"sleep 1 && curl -sS http://127.0.0.1:{outside}/hello.txt > got.txt"
    started = await run(context, command, run_in_background=True)
    assert "background" in text(started)
    assert len(channels() - before) == 1  # its channel, in this test's own temp folder
    for _ in range(200):
        if (work / "got.txt").is_file() and channels() == before:
            break
        await asyncio.sleep(0.05)
    assert (work / "got.txt").read_text() == "hello from outside\n"
    assert channels() == before


async def test_a_bad_entry_stops_the_command_with_what_to_fix(
    tools: None, home: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(work, allowed_domains=("https://pypi.org/simple",))
    result = await run(context, "echo never")
    assert result.is_error and "never" not in text(result).replace("echo never", "")
    assert "sandbox.network.allowedDomains" in text(result)


# --- the entries' grammar ------------------------------------------------------------------

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "localhost",
    "LOCALHOST.",
    "a.localhost",
    "0.0.0.0",
]


@given(
    st.sampled_from(LOOPBACK_SPELLINGS),
    st.lists(st.sampled_from(["pypi.org", "*.github.com", "*", "files.example.org:443"])),
    st.integers(1, 65535),
)
def test_no_spelling_of_the_loopback_passes_unless_the_address_is_allowed(
    spelling: str, allowed: list[str], port: int
) -> None:
    policy = NetworkPolicy.parse(allowed)
    host = spelling.strip("[]")
    assert (
        policy.refusal(host, port) is not None
        or policy.address_refusal(host, port, "127.0.0.1") is not None
    )
    opened = NetworkPolicy.parse([*allowed, "127.0.0.1"])
    assert opened.refusal(host, port) is None
    assert opened.address_refusal(host, port, "127.0.0.1") is None


@given(
    st.sampled_from(["10.0.0.5", "192.168.1.1", "172.16.3.4", "169.254.169.254", "fe80::1"]),
    st.sampled_from(["example.org", "*.example.org", "*"]),
)
def test_a_public_name_resolving_to_an_internal_address_is_refused(
    address: str, allowed: str
) -> None:
    policy = NetworkPolicy.parse([allowed])
    reason = policy.address_refusal("files.example.org", 443, address)
    assert reason is not None and address in reason
    opened = NetworkPolicy.parse([allowed, address])
    assert opened.address_refusal("files.example.org", 443, address) is None


@given(st.text(max_size=30))
def test_an_entry_parses_or_says_what_is_wrong(text_: str) -> None:
    try:
        entry = Entry.parse(text_)
    except ValueError as exc:
        assert str(exc)
    else:
        assert re.fullmatch(r"(\*\.)?[a-z0-9_.:-]+|\*", entry.host), entry


def test_subdomains_ports_and_case() -> None:
    policy = NetworkPolicy.parse(["*.PythonHosted.org", "pypi.org:443", "bücher.example"])
    assert policy.refusal("files.pythonhosted.org", 443) is None
    assert policy.refusal("pythonhosted.org", 443) is not None  # '*.' is subdomains only
    assert policy.refusal("PyPI.org.", 443) is None
    assert policy.refusal("pypi.org", 80) is not None
    assert policy.refusal("xn--bcher-kva.example", 443) is None  # the same host, in IDNA
    assert policy.address_refusal("pypi.org", 443, "151.101.0.223") is None
