"""Every shortened text says it was shortened, and a cut falls between words when it can."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from jupyter_toolhost.core.text import ELLIPSIS, WORD_BACKTRACK, one_line
from jupyter_toolhost.core.tool import SUMMARY_CHARS, build_tool

WORDS = st.lists(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=15), max_size=40
)


@settings(max_examples=500)
@given(words=WORDS, separators=st.sampled_from([" ", "\n", "  ", "\t"]), limit=st.integers(2, 130))
def test_a_cut_is_marked_and_keeps_a_prefix_of_the_line(
    words: list[str], separators: str, limit: int
) -> None:
    text = separators.join(words)
    folded = " ".join(text.split())
    shown = one_line(text, limit)
    assert "\n" not in shown and len(shown) <= limit
    if len(folded) <= limit:
        assert shown == folded
    else:
        assert shown.endswith(ELLIPSIS)
        assert folded.startswith(shown[: -len(ELLIPSIS)])


def test_a_cut_falls_between_words_when_a_space_is_near() -> None:
    code = "import pandas as pd\n" + "df = pd.read_csv('sales.csv')\n" * 10
    shown = one_line(code, SUMMARY_CHARS)
    assert shown.endswith(ELLIPSIS) and len(shown) <= SUMMARY_CHARS
    kept = shown[: -len(ELLIPSIS)]
    assert " ".join(code.split()).startswith(kept + " ")  # whole words only
    long_word = "x" * 300
    assert one_line(long_word, 50) == "x" * (50 - len(ELLIPSIS)) + ELLIPSIS
    assert WORD_BACKTRACK < SUMMARY_CHARS


class CodeInput(BaseModel):
    code: str


def test_a_tools_own_summary_is_cut_and_marked_too() -> None:
    async def run(input: CodeInput, context: object) -> str:
        return ""

    tool = build_tool(
        name="Runner",
        input_model=CodeInput,
        call=run,
        description="Runs code.",
        render_tool_use=lambda i: i.code,
    )
    summary = tool.summarize(CodeInput(code="for step in range(3):\n    print(step)\n" * 20))
    assert summary.endswith(ELLIPSIS) and len(summary) <= SUMMARY_CHARS and "\n" not in summary
