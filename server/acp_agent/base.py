"""What the ACP agent needs of taskwire, the same whether it hosts the runtime or attaches to a
server: create, find, prompt and interrupt conversations, and read their events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol

from ..events import Usage

OnEvents = Callable[[list[dict[str, Any]]], Awaitable[None]]
"""Takes a batch of events (parsed wire frames), in order; awaiting it is the feed's back-pressure."""
OnResume = Callable[[], None]
"""Called when the feed reconnected: what is ephemeral (deltas) may have been lost meanwhile."""


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """What a session needs to know of its conversation."""

    id: str
    status: str
    last_seq: int = 0
    """The tree's log end when this was read (0 in listings, which do not read it)."""
    is_root: bool = True
    workspace: str | None = None
    title: str | None = None
    updated_at: str | None = None
    """ISO 8601."""

    @classmethod
    def of(cls, info: dict[str, Any]) -> ConversationInfo:
        """From a ``ConversationInfo`` body of the REST API."""
        return cls(
            id=info["id"],
            status=info["status"],
            last_seq=int(info.get("last_seq") or 0),
            is_root=info.get("parent_id") is None,
            workspace=info.get("workspace"),
            title=info.get("title"),
            updated_at=info.get("updated_at"),
        )


class Conversations(Protocol):
    """taskwire, as the ACP agent drives it. Raises ``TaskwireError``s (``NotFound``,
    ``BadRequest`` ...) for what the client asked wrongly, ``Unavailable`` when taskwire
    cannot be reached."""

    forwarding: bool
    """Whether sub-agent events reach a root's feed (``OH_FORWARD_SUBAGENT_EVENTS``)."""

    async def create(self, agent: dict[str, Any] | None, workspace: str | None) -> ConversationInfo:
        """A new root conversation (``agent`` ``None``: the default agent), not running."""
        ...

    async def info(self, conversation_id: str) -> ConversationInfo: ...

    async def send(self, conversation_id: str, text: str) -> None:
        """Record a user message and run the conversation on it (or hand it to its run)."""
        ...

    async def interrupt(self, conversation_id: str) -> None:
        """Stop the run now; its calls are closed and it ends ``paused``."""
        ...

    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        """Cancel one sub-agent of the tree (and those below it); its parent goes on."""
        ...

    async def steer_subagent(self, conversation_id: str, subagent_id: str, text: str) -> None:
        """Hand a person's message to one running sub-agent of the tree, read before its next
        model call (``Conflict`` ``subagent_not_running`` / ``subagent_not_steerable``)."""
        ...

    async def permissions(self, conversation_id: str) -> list[dict[str, Any]]:
        """The tree's permission requests still waiting, as ``GET .../permissions`` lists them."""
        ...

    async def answer_permission(self, conversation_id: str, request_id: str, body: dict[str, Any]) -> None:
        """Answer a waiting request of the tree with a ``PermissionAnswer`` body, recorded
        ``answered_by: "acp"``. ``Conflict`` once it has an answer, ``NotFound`` if unknown."""
        ...

    async def tree_usage(self, conversation_id: str) -> Usage:
        """Tokens used so far by the conversation and every sub-agent in its tree."""
        ...

    def history(self, conversation_id: str) -> AsyncIterator[list[dict[str, Any]]]:
        """The stored events a feed of the root would show, in ``seq`` order, page by page,
        to the log's end as it is read."""
        ...

    async def follow(self, conversation_id: str, after_seq: int, on_events: OnEvents, on_resume: OnResume) -> None:
        """Feed every event past ``after_seq`` that a root's feed shows, live, resuming after
        drops (never a gap, never one twice), until cancelled.
        Raises ``NotFound`` if the conversation goes (deleted), ``Unauthorized`` if refused."""
        ...

    async def list(self, page_id: str | None) -> tuple[list[ConversationInfo], str | None]:
        """Root conversations, newest first, a page at a time."""
        ...
