"""The OpenAI chat-completions dialect of the mock LLM: read a request, render a scripted answer.

No I/O: ``mock_server.py`` feeds request bodies in and writes what these functions return.
A stream is ``chat.completion.chunk`` objects (role, text fragments, tool calls whose
``arguments`` arrive in fragments, a last chunk with ``finish_reason``, a usage chunk when
``stream_options.include_usage`` asks for it) and ``[DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import BadRequest
from .base import ChatMessage
from .openai import chat_message
from .script import (
    ScriptRequest,
    ScriptStep,
    canonical_json,
    count_assistant_turns,
    text_chunks,
)

TOOL_ID_PREFIX = "call"
_ROLES = ("system", "developer", "user", "assistant", "tool")


def openai_request(body: Any) -> ScriptRequest:
    """The selecting view of a chat-completions body; ``BadRequest`` if it is not one."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    if not isinstance(body.get("model"), str):
        raise BadRequest("model: field required (a string)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: field required (a non-empty list)")
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise BadRequest(f"messages[{n}].role: must be one of {', '.join(_ROLES)}")
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise BadRequest(f"messages[{n}].content: must be a string, a list of parts or null")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise BadRequest("tools: must be a list")

    system = "\n".join(
        _text(m.get("content")) for m in messages if m["role"] in ("system", "developer")
    )
    dialogue = [m for m in messages if m["role"] not in ("system", "developer")]
    users = [_text(m.get("content")) for m in dialogue if m["role"] == "user"]
    chars = len(system) + sum(_chars(m) for m in dialogue)
    return ScriptRequest(
        system=system,
        first_user=users[0] if users else "",
        last_user=users[-1] if users else "",
        assistant_turns=count_assistant_turns([m["role"] for m in dialogue]),
        tools=tuple(
            str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict)
        ),
        prompt_chars=chars,
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _chars(message: dict[str, Any]) -> int:
    total = len(_text(message.get("content")))
    for call in message.get("tool_calls") or []:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        # Arguments arrive as a JSON string; count what a parser would read back.
        total += len(str(function.get("name", ""))) + len(_reparsed(function.get("arguments")))
    return total


def _reparsed(arguments: Any) -> str:
    try:
        return canonical_json(json.loads(arguments)) if isinstance(arguments, str) else ""
    except ValueError:
        return arguments


def _usage(step: ScriptStep) -> dict[str, Any]:
    prompt = step.usage.input_tokens + step.usage.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": step.usage.output_tokens,
        "total_tokens": prompt + step.usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": step.usage.cache_read_tokens},
    }


def _finish_reason(step: ScriptStep) -> str:
    return "tool_calls" if step.tool_calls else "stop"


def _envelope(step: ScriptStep, model: str, kind: str) -> dict[str, Any]:
    # `created` is fixed so identical requests get identical answers.
    return {"id": f"chatcmpl-{step.response_id}", "object": kind, "created": 0, "model": model}


def openai_completion(step: ScriptStep, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    message = chat_message(ChatMessage(role="assistant", content=step.text, tool_calls=step.tool_calls))
    return {
        **_envelope(step, model, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(step)}],
        "usage": _usage(step),
    }


def openai_chunks(step: ScriptStep, model: str, *, include_usage: bool) -> list[dict[str, Any]]:
    """The streamed response as chunk objects (``[DONE]`` not included)."""
    envelope = _envelope(step, model, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in text_chunks(step.text)]
    for index, call in enumerate(step.tool_calls):
        head = {"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}
        chunks.append(chunk({"tool_calls": [head]}))
        arguments = canonical_json(call.arguments)
        cut = len(arguments) // 2
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in (arguments[:cut], arguments[cut:])
        ]
    chunks.append(chunk({}, _finish_reason(step)))
    if include_usage:
        chunks.append({**envelope, "choices": [], "usage": _usage(step)})
    return chunks


def openai_error(status: int, message: str) -> dict[str, Any]:
    """An error body in the API's shape."""
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             429: "rate_limit_error"}
    return {"error": {"message": message, "type": kinds.get(status, "server_error"),
                      "param": None, "code": None}}
