"""The LLM interface: one streaming call, provider-neutral messages.

Clients (``openai.py``, ``anthropic.py``, ``scripted.py``) translate these to their dialect and
translate their library's or peer's errors into ``LLMError`` once, at the boundary.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Literal, Protocol

from pydantic import BaseModel, Field

from ..events import Usage


class ToolCall(BaseModel):
    """A tool call the model made."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ChatMessage(BaseModel):
    """One message of the model's history.

    ``assistant`` messages may carry ``tool_calls``; each call is answered by a ``tool``
    message with its ``tool_call_id``.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    """The tool's name, on ``tool`` messages."""
    is_error: bool = False
    """On ``tool`` messages: the tool failed (Anthropic sends ``is_error``)."""


class ToolSpec(BaseModel):
    """A tool as the model is told about it."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments object."""


class LLMRequest(BaseModel):
    """Everything one call sends. Deterministic: no clock times or random ids."""

    model: str
    system: str = ""
    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = 4096


class LLMResponse(BaseModel):
    """The model's answer."""

    id: str | None = None
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


OnDelta = Callable[[str], Awaitable[None]]
"""Called with each text fragment as it streams."""


class LLM(Protocol):
    """A model the native agent can call."""

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        """Send ``request``, stream text fragments to ``on_delta``, return the whole answer.
        Raises ``LLMError`` (with a readable reason) on any failure."""
        ...

    async def aclose(self) -> None: ...
