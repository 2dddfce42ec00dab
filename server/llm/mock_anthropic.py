"""The Anthropic Messages dialect of the mock LLM: read a request, render a scripted answer.

No I/O: ``mock_server.py`` feeds request bodies in and writes what these functions return.
The streamed event sequence is the one the Anthropic API sends: ``message_start``, then per
content block ``content_block_start`` (a ``ping`` after the first), ``content_block_delta``
(``text_delta`` / ``input_json_delta``), ``content_block_stop``; then ``message_delta``
(``stop_reason``, ``usage``) and ``message_stop``.
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRequest
from .anthropic import content_blocks
from .base import ChatMessage
from .script import (
    ScriptRequest,
    ScriptStep,
    canonical_json,
    count_assistant_turns,
    text_chunks,
)

TOOL_ID_PREFIX = "toolu"


def anthropic_request(body: Any) -> ScriptRequest:
    """The selecting view of a Messages API body; ``BadRequest`` if it is not one."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    if not isinstance(body.get("model"), str):
        raise BadRequest("model: field required (a string)")
    if not isinstance(body.get("max_tokens"), int):
        raise BadRequest("max_tokens: field required (an integer)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: field required (a non-empty list)")
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise BadRequest(f"messages.{n}.role: must be 'user' or 'assistant'")
        if not isinstance(message.get("content"), (str, list)):
            raise BadRequest(f"messages.{n}.content: must be a string or a list of blocks")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise BadRequest("tools: must be a list")

    system_parts = [_text(body.get("system") or "")]
    system_parts += [_text(m["content"]) for m in messages if m["role"] == "system"]
    system = "\n".join(p for p in system_parts if p)
    dialogue = [m for m in messages if m["role"] != "system"]
    users = [_text(m["content"]) for m in dialogue if m["role"] == "user"]
    chars = len(system) + sum(_chars(m["content"]) for m in dialogue)
    return ScriptRequest(
        system=system,
        first_user=users[0] if users else "",
        last_user=users[-1] if users else "",
        assistant_turns=count_assistant_turns([m["role"] for m in dialogue]),
        tools=tuple(t.get("name", "") for t in tools if isinstance(t, dict)),
        prompt_chars=chars,
    )


def _text(content: Any) -> str:
    # The readable text of a string or block list: text blocks and tool results' text.
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_text(block.get("content") or ""))
    return "\n".join(parts)


def _chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    total = len(_text(content))
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            total += len(str(block.get("name", ""))) + len(canonical_json(block.get("input", {})))
    return total


def _usage(step: ScriptStep) -> dict[str, int]:
    return {
        "input_tokens": step.usage.input_tokens,
        "cache_creation_input_tokens": step.usage.cache_write_tokens,
        "cache_read_input_tokens": step.usage.cache_read_tokens,
        "output_tokens": step.usage.output_tokens,
    }


def _stop_reason(step: ScriptStep) -> str:
    return "tool_use" if step.tool_calls else "end_turn"


def anthropic_message(step: ScriptStep, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    answer = ChatMessage(role="assistant", content=step.text, tool_calls=step.tool_calls)
    return {
        "id": f"msg_{step.response_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(answer),
        "stop_reason": _stop_reason(step),
        "stop_sequence": None,
        "usage": _usage(step),
    }


def anthropic_events(step: ScriptStep, model: str) -> list[tuple[str, dict[str, Any]]]:
    """The streamed response as ``(event name, data)`` pairs, in the API's order."""
    start_usage = {**_usage(step), "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{step.response_id}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if step.text:
        deltas = [{"type": "text_delta", "text": chunk} for chunk in text_chunks(step.text)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for call in step.tool_calls:
        arguments = canonical_json(call.arguments)
        cut = len(arguments) // 2
        deltas = [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in ("", arguments[:cut], arguments[cut:])
        ]
        blocks.append(({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}, deltas))
    if not blocks:
        events.append(("ping", {"type": "ping"}))
    for index, (block, deltas) in enumerate(blocks):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(step), "stop_sequence": None},
                "usage": _usage(step),
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """An error body in the API's shape."""
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             429: "rate_limit_error", 529: "overloaded_error"}
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
