"""How a failed call reads to the model: one wording for every `is_error` tool_result.

The pipeline builds its failures with it, and the conversation uses it for the tool_results
it writes itself (an interrupted turn), so both read the same without the conversation
depending on the pipeline.
"""

from __future__ import annotations


def error_content(message: str) -> str:
    """How every pipeline failure reads to the model."""
    return f"<tool_use_error>{message}</tool_use_error>"
