"""The model client's TLS: one context per process, still verifying, still following the
environment's trust settings.

Every session makes its own `AnthropicModel`, and the SDK would make a new TLS context for
each (loading every CA certificate again, about 35 ms). The context is shared instead; these
tests make sure sharing changed nothing a person relies on, against a real HTTPS server on
loopback with a self-signed certificate made by `openssl`.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from loopback_http import serve

from jupyter_toolhost.model.anthropic_model import AnthropicModel, tls_context
from jupyter_toolhost.model.base import ModelAPIError, ModelError, ModelRequest

OVERLOADED = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'


class _Busy(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(529)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(OVERLOADED)))
        self.end_headers()
        self.wfile.write(OVERLOADED)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def https_url(certificate: tuple[Path, Path]) -> Iterator[str]:
    cert, key = certificate
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    with serve(_Busy, tls=server_side) as port:
        yield f"https://127.0.0.1:{port}"


async def _ask(url: str) -> BaseException:
    model = AnthropicModel(api_key="test-key", base_url=url, max_retries=0, timeout=10)
    request = ModelRequest(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], max_tokens=16
    )
    with pytest.raises(ModelError) as failed:
        async for _ in model.stream(request):
            pass
    return failed.value


def test_model_clients_do_not_make_a_context_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted where the SDK's HTTP library makes its default context: three sessions'
    clients (under a trust setting not seen before) make one between them."""
    import httpcore2

    made: list[int] = []
    default = httpcore2.default_ssl_context

    def counting(**options: object) -> ssl.SSLContext:
        made.append(1)
        return default(**options)  # type: ignore[arg-type]

    monkeypatch.setattr(httpcore2, "default_ssl_context", counting)
    monkeypatch.setenv("SSL_CERT_DIR", "/etc/ssl/certs")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    for _ in range(3):
        assert AnthropicModel(api_key="test-key", base_url="http://127.0.0.1:9").client
    assert len(made) == 1, made


def test_sessions_share_one_context_per_trust_setting(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tls_context()
    assert tls_context() is first
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    own = tls_context()
    assert own is not first and own.verify_mode == ssl.CERT_REQUIRED
    assert tls_context() is own


async def test_an_untrusted_certificate_is_still_refused(
    https_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    error = await _ask(https_url)
    assert not isinstance(error, ModelAPIError), error  # no answer was read
    # The message names the cause, not only the SDK's "Connection error."
    assert "CERTIFICATE_VERIFY_FAILED" in str(error), error


async def test_ssl_cert_file_still_decides_what_is_trusted(
    https_url: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    error = await _ask(https_url)
    # The handshake passed: the server's own answer (529, overloaded) came back.
    assert isinstance(error, ModelAPIError) and error.status == 529, error
