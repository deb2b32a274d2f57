"""WebFetch hosts compared as addresses, against a real loopback HTTP server: every spelling
of the loopback is the host a domain rule names, and the loopback needs an explicit allow.

Hypothesis draws the spellings of 127.0.0.1 that a C resolver accepts, so the forms are not
only the ones written here.
"""

from __future__ import annotations

import http.server
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback_http import serve
from session_support import ScriptedApprover, last_results, result_text
from test_fence_rules import MODES

from jupyter_toolhost import Session
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.permissions.hosts import LOOPBACK, canonical_host, internal
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import web_fetch

PAGE = "LOOPBACK-PAGE-3c9a"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serve(_Handler) as number:
        yield number


SPELLINGS = [
    "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.1",
    "[::ffff:127.0.0.1]", "localhost", "LOCALHOST", "localhost.", "127.0.0.1.",
]  # fmt: skip


async def fetch(
    root: Path, mode: str, url: str, settings: str | None, approver: ScriptedApprover
) -> str:
    if settings is not None:
        (root / ".toolhost").mkdir(parents=True, exist_ok=True)
        (root / ".toolhost" / "settings.json").write_text(settings)
    turns = [Turn([tool_use("WebFetch", {"url": url})]), Turn([text("done")])]
    with MessagesServer(turns) as server:
        session = Session(
            tools=[web_fetch.make_tool()],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id="claude-sonnet-4-5",
            cwd=root,
            trust_folder=True,  # the folder's settings are the test's own
            permission_mode=mode,  # type: ignore[arg-type]
            approver=approver,
            small_model="none",
            retry_backoff_s=0.01,
        )
        await session.run("go")
        bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
    return "\n".join(result_text(b) for b in last_results(bodies[-1]))


@pytest.mark.parametrize("spelling", [s for s in SPELLINGS if not s.endswith(".")])
def test_every_spelling_really_reaches_the_loopback(spelling: str, port: int) -> None:
    """The attack is real: each spelling connects to the server (Python's own resolver; a
    trailing dot is left out, since not every resolver here takes ``localhost.``)."""
    host = spelling.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_connection((host, port), timeout=5) as conn:
        assert conn.family in (family, socket.AF_INET, socket.AF_INET6)
    assert canonical_host(spelling) == LOOPBACK


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_domain_deny_holds_for_every_spelling(
    tmp_path: Path, port: int, mode: str, spelling: str
) -> None:
    approver = ScriptedApprover(ApprovalDecision("allow"))
    result = await fetch(
        tmp_path,
        mode,
        f"http://{spelling}:{port}/",
        '{"permissions": {"deny": ["WebFetch(domain:127.0.0.1)"]}}',
        approver,
    )
    assert PAGE not in result and "denied" in result
    assert approver.asked == []


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "auto", "bypassPermissions"])
async def test_the_loopback_needs_an_explicit_allow(tmp_path: Path, port: int, mode: str) -> None:
    approver = ScriptedApprover(ApprovalDecision("deny"))
    result = await fetch(tmp_path, mode, f"http://127.1:{port}/", None, approver)
    assert PAGE not in result
    assert [r.tool_name for r in approver.asked] == ["WebFetch"]
    assert "loopback or private" in approver.asked[0].message


async def test_an_allow_rule_for_localhost_lets_any_spelling_through(
    tmp_path: Path, port: int
) -> None:
    approver = ScriptedApprover()
    allowed = '{"permissions": {"allow": ["WebFetch(domain:localhost)"]}}'
    result = await fetch(tmp_path, "dontAsk", f"http://0x7f000001:{port}/", allowed, approver)
    assert PAGE in result and approver.asked == []


async def test_without_an_allow_dont_ask_denies_the_loopback(tmp_path: Path, port: int) -> None:
    result = await fetch(tmp_path, "dontAsk", f"http://[::1]:{port}/", None, ScriptedApprover())
    assert PAGE not in result and "loopback or private" in result


def _aton_spellings() -> st.SearchStrategy[str]:
    """127.0.0.1 written in inet_aton's forms: 1-4 parts, each decimal, octal or hex."""

    def spell(value: int, style: str) -> str:
        return {"d": str(value), "o": "0" + format(value, "o"), "x": hex(value)}[style]

    def build(parts: int, styles: list[str]) -> str:
        number = int(ipaddress.IPv4Address("127.0.0.1"))
        sizes = {1: [4], 2: [1, 3], 3: [1, 1, 2], 4: [1, 1, 1, 1]}[parts]
        values, shift = [], 32
        for size in sizes:
            shift -= 8 * size
            values.append((number >> shift) & ((1 << (8 * size)) - 1))
        return ".".join(spell(v, s) for v, s in zip(values, styles, strict=False))

    return st.integers(1, 4).flatmap(
        lambda n: st.lists(st.sampled_from("dox"), min_size=n, max_size=n).map(
            lambda styles: build(n, styles)
        )
    )


@settings(max_examples=200, deadline=None)
@given(_aton_spellings())
def test_generated_spellings_are_the_loopback(spelling: str) -> None:
    assert socket.inet_aton(spelling) == socket.inet_aton("127.0.0.1")  # the C library agrees
    assert canonical_host(spelling) == LOOPBACK and internal(LOOPBACK)


@pytest.mark.parametrize(
    ("host", "canonical", "inside"),
    [("Example.COM.", "example.com", False), ("bücher.de", "xn--bcher-kva.de", False),
     ("10.1", "10.0.0.1", True), ("[::ffff:192.168.1.1]", "192.168.1.1", True),
     ("169.254.169.254", "169.254.169.254", True), ("0.0.0.0", LOOPBACK, True),
     ("8.8.8.8", "8.8.8.8", False)],
)  # fmt: skip
def test_other_hosts(host: str, canonical: str, inside: bool) -> None:
    assert canonical_host(host) == canonical
    assert internal(canonical) is inside
