"""The LLM interface: one streaming call, provider-neutral messages.

Clients (``openai.py``, ``anthropic.py``, ``scripted.py``) translate these to their dialect and
translate their library's or peer's errors into ``LLMError`` once, at the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class RetryNotice:
    """A failed attempt of a model call that is about to be tried again."""

    attempt: int
    """The attempt that comes next (2 for the first retry)."""
    max_attempts: int
    delay: float
    """Seconds waited before it."""
    reason: str
    """Short and stable: ``429``, ``503``, ``connection``, ``timeout``, ``stalled`` ..."""
    error: str
    """The failure, readable (the provider's own message when it sent one)."""
    status: int | None = None
    discard_text: bool = False
    """The failed attempt had streamed text: whoever showed it drops it (the next attempt
    streams its own)."""


class CallObserver(Protocol):
    """What a model call needs from whoever runs it while it retries: somewhere to report
    each retry, and a wait that the run can cut short. The runtime passes one in; the model
    clients never import the runtime."""

    async def retrying(self, notice: RetryNotice) -> None:
        """An attempt failed and the call will try again after ``notice.delay``."""
        ...

    async def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; ``False`` when the run is pausing and the call should be
        given up (``CallAbandoned``). A cancelled run cancels the wait, as any await."""
        ...


class CallAbandoned(Exception):
    """A model call given up during a back-off because its run is pausing; not a failure."""


class LLM(Protocol):
    """A model the native agent can call."""

    async def complete(
        self, request: LLMRequest, on_delta: OnDelta | None = None, observer: CallObserver | None = None
    ) -> LLMResponse:
        """Send ``request``, stream text fragments to ``on_delta``, return the whole answer.
        Transient failures are retried (each reported to ``observer``); raises ``LLMError``
        (with a readable reason) once the call cannot succeed, ``CallAbandoned`` when
        ``observer.wait`` said to give up."""
        ...

    async def aclose(self) -> None: ...
