"""Request validation for the loopback Messages API server.

Owns the checks that the real Messages API applies before generating anything, and
the wording of its `invalid_request_error` messages (those about thinking are in
`thinking.py`, the documented limits the SDK's types do not express in `limits.py`; the
SDK's own request types are applied by `model.request_types`), so that a client which
passes against the loopback server would also pass against the real API. Each check raises
`InvalidRequest`; `validate_request` returns the first failure or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any, cast

from jupyter_toolhost.testing.invalid_request import InvalidRequest

if TYPE_CHECKING:
    from jupyter_toolhost.testing.thinking import Signer

__all__ = ["TOOL_NAME_PATTERN", "InvalidRequest", "validate_request"]

TOOL_NAME_PATTERN = "^[a-zA-Z0-9_-]{1,128}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
_ROLES = ("user", "assistant")
_SEARCH_TYPES = frozenset({"tool_search_tool_bm25_20251119", "tool_search_tool_regex_20251119"})


def validate_request(
    body: object,
    *,
    count_tokens: bool = False,
    signer: Signer | None = None,
    headers: Mapping[str, str] | None = None,
    sdk_types: bool = True,
) -> InvalidRequest | None:
    """Check a `/v1/messages` (or `/count_tokens`) body; return the first problem found.

    `signer` checks the signatures of thinking blocks (the server's own); `headers`
    (lower-cased names) lets beta fields be checked against `anthropic-beta`; `sdk_types`
    False leaves out the check against the SDK's request types (for a peer client)."""
    try:
        _check(body, count_tokens=count_tokens, signer=signer, headers=headers, sdk_types=sdk_types)
    except InvalidRequest as problem:
        return problem
    return None


def _check(
    body: object,
    *,
    count_tokens: bool,
    signer: Signer | None = None,
    headers: Mapping[str, str] | None = None,
    sdk_types: bool = True,
) -> None:
    from jupyter_toolhost.testing.limits import check_limits
    from jupyter_toolhost.testing.prompt_cache import breakpoint_problem
    from jupyter_toolhost.testing.thinking import check_thinking_request

    if not isinstance(body, dict):
        raise InvalidRequest("Input should be a valid dictionary")
    _check_model(body)
    if not count_tokens:
        _check_max_tokens(body)
    messages = _check_messages_shape(body)
    tool_names = _check_tools(body)
    _check_roles(messages)
    _check_non_empty(messages)
    _check_tool_pairing(messages)
    _check_tool_references(messages, tool_names)
    misplaced = breakpoint_problem(body)
    if misplaced is not None:
        raise InvalidRequest(misplaced)
    check_thinking_request(
        body, messages, count_tokens=count_tokens, signer=signer, headers=headers
    )
    if sdk_types:
        _check_sdk_types(body, count_tokens=count_tokens, headers=headers)
    check_limits(body)


def _check_sdk_types(
    body: dict[str, Any], *, count_tokens: bool, headers: Mapping[str, str] | None
) -> None:
    """The body against the `anthropic` SDK's own request types, strictly (unknown keys
    forbidden, iterables checked); the beta types when an `anthropic-beta` header is sent."""
    from jupyter_toolhost.model.request_types import sdk_problem

    beta = bool((headers or {}).get("anthropic-beta"))
    problem = sdk_problem(body, endpoint="count_tokens" if count_tokens else "create", beta=beta)
    if problem is not None:
        raise InvalidRequest(problem)


# --- fields -----------------------------------------------------------------------------


def _check_model(body: dict[str, Any]) -> None:
    if "model" not in body:
        raise InvalidRequest("model: Field required")
    if not isinstance(body["model"], str):
        raise InvalidRequest("model: Input should be a valid string")


def _check_max_tokens(body: dict[str, Any]) -> None:
    if "max_tokens" not in body:
        raise InvalidRequest("max_tokens: Field required")
    value = body["max_tokens"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest("max_tokens: Input should be a valid integer")
    if value < 1:
        raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")


def _check_messages_shape(body: dict[str, Any]) -> list[dict[str, Any]]:
    if "messages" not in body:
        raise InvalidRequest("messages: Field required")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise InvalidRequest("messages: Input should be a valid list")
    if not messages:
        raise InvalidRequest("messages: at least one message is required")
    for index, message in enumerate(messages):
        _check_message_shape(index, message)
    return messages


def _check_message_shape(index: int, message: object) -> None:
    where = f"messages.{index}"
    if not isinstance(message, dict):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary")
    if message.get("role") not in _ROLES:
        raise InvalidRequest(f"{where}.role: Input should be 'user' or 'assistant'")
    content = message.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}.content: Input should be a valid list")
    for position, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidRequest(f"{where}.content.{position}: Input should be a valid dictionary")
        if block["type"] == "tool_use" and not isinstance(block.get("input"), dict):
            raise InvalidRequest(
                f"{where}.content.{position}.input: Input should be a valid dictionary"
            )


def _check_tools(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools")
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: list[str] = []
    deferred = 0
    for index, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise InvalidRequest(
                f"tools.{index}.name: String should match pattern '{TOOL_NAME_PATTERN}'"
            )
        names.append(name)
        deferred += _check_deferral(index, cast(dict[str, Any], tool))
    if len(set(names)) != len(names):
        raise InvalidRequest("tools: Tool names must be unique.")
    if tools and deferred == len(tools):
        raise InvalidRequest(
            "All tools have defer_loading set. At least one tool must be non-deferred."
        )
    return set(names)


def _check_deferral(index: int, tool: dict[str, Any]) -> bool:
    """Whether the tool is deferred; its `defer_loading` and tool-search type are checked."""
    kind = tool.get("type")
    if isinstance(kind, str) and kind.startswith("tool_search_tool_") and kind not in _SEARCH_TYPES:
        raise InvalidRequest(
            f"tools.{index}.type: Input tag '{kind}' found using 'type' does not match any "
            f"of the expected tags: {', '.join(sorted(_SEARCH_TYPES))}"
        )
    if "defer_loading" not in tool:
        return False
    value = tool["defer_loading"]
    if not isinstance(value, bool):
        raise InvalidRequest(f"tools.{index}.defer_loading: Input should be a valid boolean")
    return value


# --- conversation structure -------------------------------------------------------------


def _check_roles(messages: list[dict[str, Any]]) -> None:
    if messages[0]["role"] != "user":
        raise InvalidRequest('messages: first message must use the "user" role')
    for previous, current in pairwise(messages):
        if previous["role"] == current["role"]:
            raise InvalidRequest(
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{current["role"]}" roles in a row'
            )


def _check_non_empty(messages: list[dict[str, Any]]) -> None:
    last = len(messages) - 1
    for index, message in enumerate(messages):
        prefill = index == last and message["role"] == "assistant"
        if not prefill and not message["content"]:
            raise InvalidRequest(
                f"messages.{index}: all messages must have non-empty content "
                "except for the optional final assistant message"
            )
        for block in _text_blocks(message["content"]):
            if not block.get("text"):
                raise InvalidRequest("messages: text content blocks must be non-empty")
        if prefill and _ends_with_whitespace(message["content"]):
            raise InvalidRequest(
                "messages: final assistant content cannot end with trailing whitespace"
            )


def _text_blocks(content: str | list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    if isinstance(content, str):
        return
    for block in content:
        if block["type"] == "text":
            yield block
        elif block["type"] == "tool_result" and isinstance(block.get("content"), list):
            yield from (inner for inner in block["content"] if inner.get("type") == "text")


def _ends_with_whitespace(content: str | list[dict[str, Any]]) -> bool:
    if isinstance(content, str):
        return content != content.rstrip()
    if not content or content[-1]["type"] != "text":
        return False
    text = str(content[-1].get("text", ""))
    return text != text.rstrip()


def _blocks(message: dict[str, Any], kind: str) -> list[tuple[int, dict[str, Any]]]:
    content = message["content"]
    if isinstance(content, str):
        return []
    return [(position, block) for position, block in enumerate(content) if block["type"] == kind]


def _check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            following = messages[index + 1] if index + 1 < len(messages) else None
            _check_answered(index, message, following)
        else:
            previous = messages[index - 1] if index > 0 else None
            _check_results_expected(index, message, previous)


def _check_answered(
    index: int, assistant: dict[str, Any], following: dict[str, Any] | None
) -> None:
    use_ids = [str(block.get("id")) for _, block in _blocks(assistant, "tool_use")]
    if not use_ids:
        return
    results = [] if following is None else _blocks(following, "tool_result")
    answered = {str(block.get("tool_use_id")) for _, block in results}
    missing = [use_id for use_id in use_ids if use_id not in answered]
    if missing:
        raise InvalidRequest(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
    leading = [position for position, _ in results] == list(range(len(results)))
    if not leading:
        raise InvalidRequest(
            f"messages.{index + 1}: Did not find {len(use_ids)} tool_result block(s) at the "
            "beginning of this message. Messages following tool_use blocks must begin with a "
            "matching number of tool_result blocks."
        )


def _check_results_expected(
    index: int, user: dict[str, Any], previous: dict[str, Any] | None
) -> None:
    use_ids = (
        set()
        if previous is None
        else {str(block.get("id")) for _, block in _blocks(previous, "tool_use")}
    )
    for position, block in _blocks(user, "tool_result"):
        result_id = str(block.get("tool_use_id"))
        if result_id not in use_ids:
            raise InvalidRequest(
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {result_id}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message."
            )


def _check_tool_references(messages: list[dict[str, Any]], tool_names: set[str]) -> None:
    for index, message in enumerate(messages):
        for position, result in _blocks(message, "tool_result"):
            inner = result.get("content")
            if not isinstance(inner, list):
                continue
            for inner_position, block in enumerate(inner):
                if not isinstance(block, dict) or block.get("type") != "tool_reference":
                    continue
                name = block.get("tool_name")
                if name not in tool_names:
                    raise InvalidRequest(
                        f"messages.{index}.content.{position}.content.{inner_position}: "
                        f"tool reference '{name}' does not match any tool defined in `tools`",
                        error_code="tool_reference_unresolved",
                    )
