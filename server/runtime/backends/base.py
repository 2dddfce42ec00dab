"""What an agent backend is, and what the runtime lends it (``AgentHost``).

A backend (native LLM loop, ACP bridge, Claude SDK) drives one conversation. It never touches
the store or the bus: it emits events through its host, and maps its peer's sub-agents onto
taskwire sub-agents with ``host.start_subagent`` so that stamping, storage and forwarding are
the same for every backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

from server.events import Event, LLMCall, Usage
from server.settings import Settings


class AgentHost(Protocol):
    """One conversation (a root or a sub-agent) as a backend sees it."""

    conversation_id: str
    root_id: str
    workspace: Path
    settings: Settings

    @property
    def is_subagent(self) -> bool: ...

    stop_hook: Callable[[], Awaitable[None]] | None
    """A sub-agent a peer agent runs: how to ask the peer to stop it (``None``: it cannot)."""

    async def emit(self, event: Event, *, wait: bool = True) -> None:
        """Record ``event`` in this conversation's stream (stamped when this is a sub-agent) and
        publish it where it belongs, once stored. Ephemeral events are only published.
        ``wait=False`` returns once it is queued (see ``ConversationHost.emit``)."""
        ...

    def take_user_messages(self) -> list[str]:
        """User messages sent since the last call (already stored as MessageEvents)."""
        ...

    @property
    def has_pending_messages(self) -> bool:
        """True when user messages arrived that ``take_user_messages`` has not handed out yet."""
        ...

    @property
    def pause_requested(self) -> bool:
        """Set by ``POST /pause``: stop at the next safe point and return."""
        ...

    async def start_subagent(
        self,
        parent_tool_use_id: str,
        *,
        subagent_type: str,
        description: str,
        agent: dict[str, Any] | None = None,
    ) -> AgentHost:
        """A child conversation for a sub-agent spawned by ``parent_tool_use_id`` (a tool call of
        this conversation). Emits its ``SubagentStartedEvent``. Its events are stamped with
        ``parent_tool_use_id`` and its id, stored in its own stream, and forwarded to the root's
        socket when ``OH_FORWARD_SUBAGENT_EVENTS`` is on."""
        ...

    async def finish_subagent(
        self, child: AgentHost, *, status: str, result: str, usage: Usage | None = None
    ) -> None:
        """Emit the child's ``SubagentFinishedEvent`` and record its outcome."""
        ...

    async def add_usage(self, usage: Usage, call: LLMCall | None = None) -> None:
        """Add an LLM call's tokens to this conversation's stats; ``call`` describes the
        request when the backend made it itself (a trace's ``chat`` span comes from it)."""
        ...


class AgentBackend(Protocol):
    """Drives one conversation's agent."""

    async def run(self, host: AgentHost) -> str | None:
        """Work on the user messages so far until the agent is done (or a pause is requested).
        Returns the final answer, if any. Raises ``BackendError`` on failure; cancellation
        (interrupt) is a ``CancelledError`` after closing in-flight tool calls."""
        ...

    async def close(self) -> None:
        """Release what the backend holds (subprocesses, sessions). Idempotent."""
        ...
