"""``OpenAILLM``: OpenAI-compatible chat completions over HTTP, streamed.

``POST {base_url}/chat/completions`` with function tools, ``stream: true`` and
``stream_options.include_usage``. Text fragments go to ``on_delta``; tool-call argument
fragments are assembled per call index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import LLMError
from ..events import Usage
from .base import ChatMessage, LLMRequest, LLMResponse, ToolCall
from .retry import TransientLLMError, stream_error
from .script import canonical_json
from .sse import SSEChatClient, SSEvent, parse_arguments


class OpenAILLM(SSEChatClient):
    """A chat-completions model: ``OpenAILLM(model, base_url, api_key, timeout)``.
    ``base_url`` includes the version (``.../v1``); ``/chat/completions`` is appended."""

    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def request_body(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += [chat_message(m) for m in request.messages]
        body: dict[str, Any] = {"model": request.model or self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        body["max_tokens"] = request.max_tokens
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body

    def new_stream(self) -> _Stream:
        return _Stream()


def chat_message(message: ChatMessage) -> dict[str, Any]:
    """One history message in the chat-completions shape."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": canonical_json(call.arguments)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _Stream:
    """Assembles a streamed completion from its chunks."""

    id: str | None = None
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=lambda: Usage(llm_calls=1))
    done: bool = False

    def feed(self, event: SSEvent) -> str:
        """Take one chunk; return its text fragment ('' if none)."""
        if event.data.strip() == "[DONE]":
            self.done = True
            return ""
        chunk = event.json()
        if "error" in chunk:
            error = chunk["error"]
            if isinstance(error, dict):
                raise stream_error(error.get("type"), error.get("message"))
            raise stream_error(None, error)
        self.id = self.id or chunk.get("id")
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        text = ""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text += delta["content"]
            for part in delta.get("tool_calls") or []:
                call = self.calls.setdefault(int(part.get("index", len(self.calls))), _PartialCall())
                function = part.get("function") or {}
                call.id = part.get("id") or call.id
                call.name = function.get("name") or call.name
                call.arguments += function.get("arguments") or ""
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        if text:
            self.text.append(text)
        return text

    def response(self) -> LLMResponse:
        if not (self.done or self.finish_reason):
            raise TransientLLMError("the answer's stream broke off before the completion finished", reason="broken_stream")
        calls = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            if not partial.id or not partial.name:
                raise LLMError(f"malformed stream: tool call #{index} has no id or name")
            calls.append(
                ToolCall(id=partial.id, name=partial.name,
                         arguments=parse_arguments(partial.arguments, partial.name))
            )
        return LLMResponse(
            id=self.id,
            text="".join(self.text),
            tool_calls=calls,
            stop_reason=self.finish_reason,
            usage=self.usage,
        )


def _usage(raw: dict[str, Any]) -> Usage:
    # prompt_tokens includes cached ones; Usage counts them apart, as Anthropic does.
    cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0) - cached,
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        llm_calls=1,
    )
