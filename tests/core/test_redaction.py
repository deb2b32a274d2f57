"""`core.redaction` on its own: what it replaces, what it must leave alone, and files of any
size read in pieces. Every key here is a fake made for the test."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import uuid
from pathlib import Path

import pytest

from jupyter_toolhost.core.redaction import Redactor, credential_environment, marker

KEY = "sk-ant-api03-FAKE-FOR-UNIT-TESTS-ONLY-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
SIGNING = str(uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF))
REDACTOR = Redactor({"ANTHROPIC_API_KEY": KEY, "kernel signing key": SIGNING})


def test_named_values_and_their_cut_off_ends_become_markers():
    said = REDACTOR.text(f"a {KEY} b {SIGNING} c\nstart {KEY[:30]}…\n…{KEY[-25:]} end")
    assert said == (
        "a [redacted: ANTHROPIC_API_KEY] b [redacted: kernel signing key] c\n"
        "start [redacted: ANTHROPIC_API_KEY]…\n…[redacted: ANTHROPIC_API_KEY] end"
    )


def test_values_too_short_or_not_secret_are_never_named():
    redactor = Redactor({"A": "test", "B": "/home/user/key.pem", "C": "true", "D": "12345678"})
    assert redactor.labels == ()
    assert redactor.text("test /home/user/key.pem true 12345678") == (
        "test /home/user/key.pem true 12345678"
    )


SHAPES = {
    "sk-ant-api03-" + "x1" * 20: "Anthropic key",
    "sk-proj-" + "Ab3" * 12: "OpenAI key",
    "sk-" + "A1b2" * 12: "OpenAI key",
    "ghp_" + "a1B2" * 9: "GitHub token",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop": "GitHub token",
    "glpat-" + "x" * 20: "GitLab token",
    "AKIAIOSFODNN7EXAMPLE": "AWS access key id",
    "xoxb-123456789012-abcdefghij": "Slack token",
    "https://hooks.slack.com/services/T000/B000/XXXXXXXX": "Slack webhook",
    "AIza" + "Sy" * 17 + "Z": "Google API key",
    "sk_live_" + "a1" * 12: "Stripe key",
    "hf_" + "Ab" * 17: "Hugging Face token",
    "npm_" + "a" * 36: "npm token",
    "pypi-AgEIcHlwaS5vcmc" + "x" * 40: "PyPI token",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n": (
        "JSON Web Token"
    ),
}


@pytest.mark.parametrize("token,label", SHAPES.items())
def test_token_shapes_are_redacted_with_their_name(token: str, label: str):
    for context in ("{}", "value={}", "'{}'", '{{"v": "{}"}}', "(see {}).", "{}\n"):
        said = REDACTOR.text(context.format(token))
        assert token not in said and marker(label) in said, (context, said)


@pytest.mark.parametrize(
    "line,kept",
    [
        ("GITHUB_TOKEN=abcdef0123456789xyz", "GITHUB_TOKEN="),
        ("export DB_PASSWORD=correct-horse-battery", "export DB_PASSWORD="),
        ('config = {"api_key": "abcdefgh12345678"}', '"api_key": "'),
        ("client_secret: 'Zx9Zx9Zx9Zx9Zx9'", "client_secret: '"),
        ("postgres://admin:hunter2pass@db.example.com/app", "postgres://admin:"),
        ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer "),
        ("x-api-key: abcdefghijklmnop12", "x-api-key: "),
        ('İstanbul db_password: "hunter2hunter2"', 'db_password: "'),
    ],
)
def test_credentials_in_assignments_headers_and_urls(line: str, kept: str):
    said = REDACTOR.text(line)
    assert f"{kept}[redacted: " in said, said


def test_a_private_key_block_is_redacted_whole():
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n"
    pem += "-----END OPENSSH PRIVATE KEY-----"
    assert REDACTOR.text(f"before\n{pem}\nafter") == "before\n[redacted: private key]\nafter"
    cut = REDACTOR.text("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA")
    assert "MIIE" not in cut, "a block cut off by a preview is redacted too"


ORDINARY = [
    hashlib.sha256(b"data").hexdigest(),
    "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a",
    str(uuid.UUID(int=42)),
    '{"token": "internationalization", "tokens": 12, "key": "customer_id_column"}',
    "key = compute_key(data)",
    "TOKENIZERS_PARALLELISM=false",
    "PWD=/home/user/project",
    "SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.1234",
    "https://example.com/a/b?q=1&page=2",
    "see https://docs.python.org:443/3/",
    "sk-learn-documentation-page-for-users",
    "the monkey=bananabananas",
    "task-123 disk-usage risk-score",
    "id,name,price\n1,widget,9.99\n2,gadget,19.99",
    "def password_strength(password: str) -> int:",
    "Authorization header missing",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_data_is_left_alone(text: str):
    assert REDACTOR.text(text) == text


def test_base64_data_is_left_alone():
    rng = random.Random(40)
    data = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(300_000))).decode()
    assert REDACTOR.text(data) == data
    assert REDACTOR.text(f'<img src="data:image/png;base64,{data}">') == (
        f'<img src="data:image/png;base64,{data}">'
    )


def test_content_blocks_images_and_references_stay_as_they_are():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    reference = {"type": "tool_reference", "tool_name": "WebFetch"}
    document = {"type": "document", "source": {"type": "text", "data": f"k={KEY}"}}
    content = [image, reference, {"type": "text", "text": KEY}, document]
    redacted = REDACTOR.content(content)
    assert isinstance(redacted, list)
    assert redacted[0] is image and redacted[1] is reference
    assert redacted[2]["text"] == "[redacted: ANTHROPIC_API_KEY]"
    assert redacted[3]["source"]["data"] == "k=[redacted: ANTHROPIC_API_KEY]"
    assert content[2]["text"] == KEY, "the tool's own objects are not changed"


def test_a_display_keeps_its_images_and_loses_its_secrets():
    shown = {
        "data": {
            "text/html": f"<b>{KEY}</b>",
            "application/json": {"nested": [KEY]},
            "image/png": KEY,
        },
        "metadata": {"isolated": True},
    }
    redacted = REDACTOR.bundle(shown)
    assert redacted["data"]["text/html"] == "<b>[redacted: ANTHROPIC_API_KEY]</b>"
    assert redacted["data"]["application/json"] == {"nested": ["[redacted: ANTHROPIC_API_KEY]"]}
    assert redacted["data"]["image/png"] == KEY
    assert redacted["metadata"] == {"isolated": True}


def _sample() -> str:
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEpAIBAAKCAQEA\n" * 200
    pem += "-----END RSA PRIVATE KEY-----\n"
    lines = [f"line {i} with ordinary text" for i in range(3000)]
    lines[700] = f"ANTHROPIC_API_KEY={KEY}"
    lines[1500] = pem
    lines[2200] = "x" * 70_000 + f" {KEY} " + "y" * 10
    lines[2900] = f"token {SIGNING} and ghp_{'a1B2' * 9}"
    return "\n".join(lines) + "\n\udcff raw byte kept\n"


@pytest.mark.parametrize("chunk", [7, 1000, 65_536, 1 << 20])
def test_a_file_is_redacted_in_pieces_exactly_as_a_whole_text(tmp_path: Path, chunk: int):
    text = _sample()
    path = tmp_path / "out.txt"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    assert REDACTOR.file(path, chunk_bytes=chunk) is True
    written = path.read_bytes().decode("utf-8", errors="surrogateescape")
    assert written == REDACTOR.text(text)
    assert KEY not in written and SIGNING not in written and "MIIEpAIB" not in written
    assert "\udcff raw byte kept" in written, "bytes that are not UTF-8 are kept"


def test_a_clean_file_is_not_rewritten(tmp_path: Path):
    path = tmp_path / "clean.txt"
    path.write_text("nothing secret here\n" * 10_000)
    before = os.stat(path)
    assert REDACTOR.file(path) is False
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [p for p in tmp_path.iterdir() if p.name != "clean.txt"]


def test_credentials_are_read_from_the_environment_by_name():
    env = {
        "ANTHROPIC_API_KEY": KEY,
        "MY_SERVICE_TOKEN": "tok-1234567890",
        "DB_PASSWORD": "hunter2hunter2",
        "PATH": "/usr/bin:/bin",
        "SSH_KEY_PATH": "/home/u/.ssh/id",
        "FEATURE_KEY": "true",
        "TOKENIZERS_PARALLELISM": "false",
        "HOME": "/root",
    }
    assert credential_environment(env) == {
        "ANTHROPIC_API_KEY": KEY,
        "MY_SERVICE_TOKEN": "tok-1234567890",
        "DB_PASSWORD": "hunter2hunter2",
    }
    redactor = Redactor.from_environment(env, named={"kernel signing key": SIGNING})
    said = redactor.text(json.dumps(env) + SIGNING)
    assert "tok-1234567890" not in said and "hunter2hunter2" not in said and SIGNING not in said
    assert "[redacted: MY_SERVICE_TOKEN]" in said and "/usr/bin:/bin" in said


def test_a_key_set_after_the_redactor_was_made_is_redacted(monkeypatch: pytest.MonkeyPatch):
    redactor = Redactor.from_environment(named={"kernel signing key": SIGNING})
    late = "late-key-typed-with-agent-key-0123456789"
    assert redactor.text(late) == late
    monkeypatch.setenv("ANTHROPIC_API_KEY", late)
    assert redactor.text(f"x {late} y") == "x [redacted: ANTHROPIC_API_KEY] y"
    assert "ANTHROPIC_API_KEY" in redactor.labels and "kernel signing key" in redactor.labels
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert redactor.text(late) == late
