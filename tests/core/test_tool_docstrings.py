"""`@tool` reads its function's docstring in the styles people write: Google, NumPy,
Sphinx (reST fields) and Epydoc; what the model is sent is the same for each."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_toolhost import ToolUseContext, tool
from jupyter_toolhost.core.docstrings import parse_docstring

GOOGLE = """Resample a time series to a coarser frequency.

    Rows that fall in one bin are combined with the chosen aggregate.

    Args:
        column (str): The column to resample, which must
            hold a datetime index.
        freq: A pandas offset alias
            such as "1h" or "1D".
        how (str, optional): The aggregate.
        context: The call's context.

    Returns:
        The resampled frame.

    Raises:
        KeyError: When the column is missing.
    """

NUMPY = """Resample a time series to a coarser frequency.

    Rows that fall in one bin are combined with the chosen aggregate.

    Parameters
    ----------
    column : str
        The column to resample, which must
        hold a datetime index.
    freq : str
        A pandas offset alias
        such as "1h" or "1D".
    how : {"mean", "sum"}, optional
        The aggregate.
    context : ToolUseContext
        The call's context.

    Returns
    -------
    DataFrame
        The resampled frame.
    """

SPHINX = """Resample a time series to a coarser frequency.

    Rows that fall in one bin are combined with the chosen aggregate.

    :param column: The column to resample, which must
        hold a datetime index.
    :type column: str
    :param str freq: A pandas offset alias
        such as "1h" or "1D".
    :param how: The aggregate.
    :param context: The call's context.
    :returns: The resampled frame.
    :raises KeyError: When the column is missing.
    """

EPYDOC = """Resample a time series to a coarser frequency.

    Rows that fall in one bin are combined with the chosen aggregate.

    @param column: The column to resample, which must
        hold a datetime index.
    @type column: str
    @param freq: A pandas offset alias
        such as "1h" or "1D".
    @param how: The aggregate.
    @param context: The call's context.
    @return: The resampled frame.
    """


STYLES = ["google", "numpy", "sphinx", "epydoc"]


def resample_tool(doc: str) -> dict[str, Any]:
    """The API definition of one function whose docstring is `doc`; `window` is a
    parameter no docstring mentions."""

    def resample(
        column: str,
        freq: str,
        context: ToolUseContext,
        how: str = "mean",
        window: int = 1,
    ) -> str:
        return f"{column} {freq} {how} {window} {context.cwd}"

    resample.__doc__ = doc
    return tool(register=False)(resample).to_api()


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX, EPYDOC], ids=STYLES)
def test_every_docstring_style_describes_the_fields(doc: str) -> None:
    api = resample_tool(doc)
    assert api["description"] == (
        "Resample a time series to a coarser frequency.\n\n"
        "Rows that fall in one bin are combined with the chosen aggregate."
    )
    props = api["input_schema"]["properties"]
    assert props["column"]["description"] == (
        "The column to resample, which must hold a datetime index."
    )
    assert props["freq"]["description"] == 'A pandas offset alias such as "1h" or "1D".'
    assert props["how"]["description"] == "The aggregate."
    # Types come from the hints, never from the docstring's own type notes.
    assert props["column"]["type"] == "string" and props["window"]["type"] == "integer"
    assert "description" not in props["window"]  # the docstring does not mention it
    assert "context" not in props  # the context is the call's, not the model's
    assert api["input_schema"]["required"] == ["column", "freq"]


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX, EPYDOC], ids=STYLES)
def test_returns_and_raises_stay_out_of_the_description(doc: str) -> None:
    parsed = parse_docstring(doc)
    assert "resampled frame" not in parsed.description
    assert "missing" not in parsed.description
    assert set(parsed.parameters) == {"column", "freq", "how", "context"}


def test_numpy_names_sharing_a_line_share_its_description() -> None:
    parsed = parse_docstring(
        """Distance from the origin.

        Parameters
        ----------
        x, y : float
            The point's coordinates.
        """
    )
    assert parsed.parameters == {"x": "The point's coordinates.", "y": "The point's coordinates."}


def test_a_docstring_without_sections_is_all_description() -> None:
    plain = "Say hello.\n\n    Twice if asked nicely."
    assert parse_docstring(plain).description == "Say hello.\n\nTwice if asked nicely."
    assert parse_docstring(plain).parameters == {}
    assert parse_docstring(None).description == "" and parse_docstring("   ").parameters == {}


def test_a_function_without_a_docstring_is_described_by_its_name() -> None:
    @tool(register=False)
    def shout(word: str) -> str:
        return word.upper()

    api = shout.to_api()
    assert api["description"] == "shout"
    assert "description" not in api["input_schema"]["properties"]["word"]
