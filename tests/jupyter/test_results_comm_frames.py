"""Every message "Open full output" sends stays far under a websocket frame limit.

Between Jupyter Server and a Kernel Gateway, tornado drops any websocket message over
10 MiB, and the answer is lost. A saved result is sent as a header and base64 pieces; this
reads 12 MB files whose bytes are the worst cases for JSON (control bytes that escape to six
characters each, 4-byte characters, bytes that are not UTF-8, random bytes) chunk by chunk,
as the viewer does, and checks the size of each message as Jupyter would encode it and that
the pieces join back into the file. The gateway test (test_gateway.py) sends such a result
over a real gateway's websocket.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from jupyter_toolhost.jupyter.kernel.results_comm import answer_messages

FRAME_LIMIT = 10 * 1024 * 1024
BUDGET = 2 * 1024 * 1024
"""What a message may take here: a fifth of the frame limit."""

CASES = {
    "control bytes": bytes(range(32)) * (12_000_000 // 32),
    "4-byte characters": "😀".encode() * 3_000_000,
    "not UTF-8": b"\xff\xfe\xc3" * 4_000_000,
    "random": random.Random(31).randbytes(12_000_000),
    "quotes and backslashes": b'"\\' * 6_000_000,
}


def _saved(tmp_path: Path, content: bytes) -> Path:
    folder = tmp_path / ".toolhost" / "sessions" / "s1" / "tool-results"
    folder.mkdir(parents=True)
    path = folder / "toolu_01.txt"
    path.write_bytes(content)
    return path


def _wire_sizes(message: dict[str, object]) -> list[int]:
    """The message's size as JSON, ASCII-escaped and not (Jupyter sends one or the other)."""
    return [
        len(json.dumps(message, ensure_ascii=True).encode()),
        len(json.dumps(message, ensure_ascii=False).encode()),
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_every_message_stays_far_under_the_frame_limit(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    content = CASES[case]
    path = _saved(tmp_path, content)
    joined = bytearray()
    offset: int | None = 0
    messages = 0
    while offset is not None:
        request = {"path": str(path), "offset": offset, "encoding": "base64"}
        header, *pieces = answer_messages(request, cwd=str(tmp_path))
        assert header["ok"] is True and header["pieces"] == len(pieces), header
        for message in (header, *pieces):
            messages += 1
            assert max(_wire_sizes(message)) <= BUDGET
        chunk = b"".join(base64.b64decode(str(piece["data"])) for piece in pieces)
        assert header["offset"] == offset
        joined += chunk
        offset = header["next_offset"]  # type: ignore[assignment]
    assert bytes(joined) == content
    assert messages > 12  # a 12 MB result took several messages


@pytest.mark.parametrize("case", ["control bytes", "4-byte characters"])
def test_a_plain_text_answer_for_an_older_viewer_fits_too(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request without `encoding` gets one message with `text`; capped so that even at
    six bytes per byte it stays under the frame limit."""
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    path = _saved(tmp_path, CASES[case])
    [answer] = answer_messages(
        {"path": str(path), "offset": 0, "limit": 5_000_000}, cwd=str(tmp_path)
    )
    assert answer["ok"] is True and isinstance(answer["text"], str)
    assert max(_wire_sizes(answer)) < FRAME_LIMIT * 0.7
    assert answer["next_offset"] is not None


def test_errors_and_lists_are_single_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    _saved(tmp_path, b"hello")
    [refused] = answer_messages({"path": "/etc/passwd", "encoding": "base64"}, cwd=str(tmp_path))
    assert refused["ok"] is False and "not a saved tool result" in refused["error"]
    [listed] = answer_messages({"list": True}, cwd=str(tmp_path))
    assert [item["name"] for item in listed["results"]] == ["toolu_01.txt"]
