"""``AnthropicLLM``: the Anthropic Messages API over HTTP, streamed.

``POST {base_url}/v1/messages`` with ``stream: true``. History maps onto content blocks:
assistant tool calls become ``tool_use`` blocks, tool messages ``tool_result`` blocks, and
consecutive messages of one side (several tool results, a user note after them) share one
message, as the API wants roles to alternate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import LLMError
from ..events import Usage
from .base import ChatMessage, LLMRequest, LLMResponse, ToolCall
from .retry import TransientLLMError, stream_error
from .sse import SSEChatClient, SSEvent, parse_arguments

API_VERSION = "2023-06-01"


class AnthropicLLM(SSEChatClient):
    """A Messages API model: ``AnthropicLLM(model, base_url, api_key, timeout)``. ``base_url``
    is the host; ``/v1/messages`` is appended."""

    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def request_body(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model or self.model, "max_tokens": request.max_tokens}
        if request.system:
            body["system"] = request.system
        body["messages"] = _messages(request.messages)
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        body["stream"] = True
        return body

    def new_stream(self) -> _Stream:
        return _Stream()


def content_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """One history message as Messages API content blocks."""
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    ]
    return blocks


def _messages(history: list[ChatMessage]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for message in history:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = content_blocks(message)
        if not blocks:
            continue  # the API rejects empty content
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return messages


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    partial_json: list[str] = field(default_factory=list)
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Stream:
    """Assembles a streamed message from its events."""

    id: str | None = None
    blocks: dict[int, _Block] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    done: bool = False

    def feed(self, sse: SSEvent) -> str:
        """Take one event; return its text fragment ('' if none)."""
        event = sse.json()
        kind = event.get("type")
        if kind == "error":
            error = event.get("error") or {}
            raise stream_error(error.get("type"), error.get("message"))
        if kind == "message_start":
            message = event["message"]
            self.id = message.get("id")
            self.usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            start = event["content_block"]
            block = _Block(
                type=start["type"],
                id=start.get("id", ""),
                name=start.get("name", ""),
                input=start.get("input") or {},
            )
            if start.get("text"):
                block.text.append(start["text"])
            self.blocks[int(event["index"])] = block
        elif kind == "content_block_delta":
            return self._delta(int(event["index"]), event["delta"])
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.done = True
        return ""

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        block = self.blocks.get(index)
        if block is None:
            raise LLMError(f"malformed stream: delta for content block {index} before its start")
        if delta.get("type") == "text_delta":
            block.text.append(delta["text"])
            return str(delta["text"])
        if delta.get("type") == "input_json_delta":
            block.partial_json.append(delta.get("partial_json", ""))
        return ""

    def response(self) -> LLMResponse:
        if not self.done:
            raise TransientLLMError("the answer's stream broke off before message_stop", reason="broken_stream")
        text: list[str] = []
        calls: list[ToolCall] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.type == "text":
                text.extend(block.text)
            elif block.type == "tool_use":
                streamed = "".join(block.partial_json)
                arguments = parse_arguments(streamed, block.name) if streamed else block.input
                calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments))
        return LLMResponse(
            id=self.id,
            text="".join(text),
            tool_calls=calls,
            stop_reason=self.stop_reason,
            usage=Usage(
                input_tokens=int(self.usage.get("input_tokens") or 0),
                output_tokens=int(self.usage.get("output_tokens") or 0),
                cache_read_tokens=int(self.usage.get("cache_read_input_tokens") or 0),
                cache_write_tokens=int(self.usage.get("cache_creation_input_tokens") or 0),  # priced apart
                llm_calls=1,
            ),
        )
