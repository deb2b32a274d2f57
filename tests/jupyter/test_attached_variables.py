"""Kernel variables attached to a prompt (`jupyter.attached`), on a real IPython shell.

What counts as a mention is explored by hypothesis over prompts built from words, e-mail
addresses, code spans, escapes and mentions; the descriptions are of real pandas and numpy
objects; the kernel's own objects and a secret in a variable are tried as an attacker would.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

from jupyter_toolhost.core.errors import UsageError
from jupyter_toolhost.core.redaction import Redactor
from jupyter_toolhost.jupyter.kernel.attached import (
    CLOSE,
    OPEN,
    attach,
    mentioned,
    unescaped,
    with_names,
)

NAMES = ("df", "weights", "label", "config", "key_holder")


@pytest.fixture
def shell() -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.user_ns.update(
        {
            "df": pd.DataFrame({"city": ["Lisbon", "Porto", "Faro"], "rain_mm": [3.5, 8.0, 0.2]}),
            "weights": np.arange(12, dtype=np.float32).reshape(3, 4),
            "label": "demo",
            "config": {"lr": 0.01, "epochs": 3},
            "key_holder": {"token": "sk-ant-api03-" + "A" * 40},
        }
    )
    yield ip
    for name in NAMES:
        ip.user_ns.pop(name, None)


def test_a_frame_and_an_array_are_described_compactly(shell: Any) -> None:
    found = attach(shell, ["df", "weights"])
    assert found is not None and found.names == ("df", "weights")
    assert found.text.startswith(OPEN) and found.text.endswith(CLOSE)
    assert "df: pandas." in found.text and "DataFrame" in found.text and "rain_mm" in found.text
    assert "shape: 3×2" in found.text and "float64" in found.text and "Lisbon" in found.text
    assert "weights: numpy.ndarray" in found.text and "shape: 3×4" in found.text
    assert found.cut == ()


def test_names_are_resolved_when_attached(shell: Any) -> None:
    first = attach(shell, ["label"])
    shell.user_ns["label"] = "changed since"
    second = attach(shell, ["label"])
    assert first is not None and second is not None
    assert "'demo'" in first.text and "'changed since'" in second.text


def test_a_missing_name_stops_with_the_nearest_names_and_the_escape(shell: Any) -> None:
    with pytest.raises(UsageError) as raised:
        attach(shell, ["dff", "weights", "nothing_like_it"])
    message = str(raised.value)
    assert "Nothing was sent" in message
    assert "`dff` is not a variable in the kernel (did you mean `df`?)" in message
    assert "`nothing_like_it` is not a variable" in message and "\\@name" in message


@pytest.mark.parametrize("name", ["os", "get_ipython", "In", "_oh", "df.__class__"])
def test_the_kernels_own_objects_are_refused(shell: Any, name: str) -> None:
    shell.user_ns.setdefault("os", os)
    with pytest.raises(UsageError, match="Nothing was sent"):
        attach(shell, [name])


def test_a_secret_in_a_variable_passes_the_redactor(shell: Any) -> None:
    found = attach(shell, ["key_holder"], redact=Redactor({}).text)
    assert found is not None and "sk-ant-api03-" + "A" * 40 not in found.text


def test_the_budget_cuts_each_and_all_and_says_so(shell: Any) -> None:
    shell.user_ns["big"] = pd.DataFrame({f"c{i}": range(200) for i in range(30)})
    try:
        found = attach(shell, ["big", "df", "weights"], limits=(600, 700))
    finally:
        shell.user_ns.pop("big")
    assert found is not None
    assert any(line.startswith("big: 600 of ") for line in found.cut)
    assert "weights: left out" in "\n".join(found.cut)
    assert "[… cut: 600 of" in found.text and "[weights: left out" in found.text
    assert len(found.text) < 700 + 600


def test_with_names_and_no_names() -> None:
    assert with_names("df, model.coef_,,x") == ["df", "model.coef_", "x"]
    assert attach(InteractiveShell.instance(), []) is None


@pytest.mark.parametrize(
    ("prompt", "names"),
    [
        ("plot @df by city", ["df"]),
        ("compare @df and @weights, then @df again", ["df", "weights"]),
        ("mail me at user@example.org", []),
        ("why does `@dataclass` fail here", []),
        ("```python\n@property\ndef x(self): ...\n```\nand @df", ["df"]),
        ("keep \\@df as text", []),
        ("fit @model.coef_ now", ["model.coef_"]),
        ("@@df", []),
    ],
)
def test_what_counts_as_a_mention(prompt: str, names: list[str]) -> None:
    assert mentioned(prompt) == names


def test_the_escape_is_dropped_from_the_prompt() -> None:
    assert unescaped("keep \\@df as text, and @df") == "keep @df as text, and @df"


_words = st.sampled_from(["plot", "the", "user@example.org", "`@decorator`", "\\@df", "a.b", "@"])
_mentions = st.sampled_from(["df", "weights", "x1", "model.coef_"])


@given(st.lists(st.one_of(_words, _mentions.map(lambda n: "@" + n)), max_size=12))
def test_every_mention_written_and_no_other_is_found(parts: list[str]) -> None:
    prompt = " ".join(parts)
    expected = list(dict.fromkeys(p[1:] for p in parts if p.startswith("@") and len(p) > 1))
    assert mentioned(prompt) == expected
