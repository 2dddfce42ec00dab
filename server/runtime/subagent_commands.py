"""The runtime's sub-agent commands: listing a tree's sub-agents, cancelling one, steering one.

A mixin of ``runtime.manager.Runtime`` (as ``answering.py`` is), so the runtime's class stays
small. ``cancel_subagent`` and ``steer_subagent`` are ``@owned`` commands: posted to any replica, it runs on the one
that owns the conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import (
    BackendError, BadRequest, SubagentNotFound, SubagentNotRunning, SubagentNotSteerable, TaskwireError, Unavailable,
)
from ..events import MessageEvent
from .capabilities import PEER_SUBAGENT, capabilities
from .ownership import owned
from .tree import subagent_entries, subtree_usages
from .work_state import add_work_states
from ..events import Usage
from ..store import ConversationRecord, Store

if TYPE_CHECKING:
    from .conversation import ConversationHost


class SubagentCommands:
    """``Runtime``'s sub-agent routes (``store``, ``get`` and ``host`` are the runtime's)."""

    store: Store

    async def get(self, conversation_id: str) -> ConversationRecord:
        raise NotImplementedError

    async def host(self, conversation_id: str) -> ConversationHost:
        raise NotImplementedError

    async def subagents(self, conversation_id: str) -> list[dict[str, Any]]:
        """The tree below ``conversation_id``, flat: one entry per sub-agent, with its current
        ``work_state``."""
        record = await self.get(conversation_id)
        tree = await self.store.tree(record.root_id)
        entries = await subagent_entries(self.store, tree, under=record.id)
        reporting = {r.id for r in tree if isinstance(r.agent, dict) and r.agent.get("kind") == "acp"}
        await add_work_states(self.store, record.root_id, entries, reporting=reporting)
        return entries

    async def tree_usage(self, record: ConversationRecord) -> Usage:
        """The usage of ``record`` and every sub-agent below it (a root: its whole tree)."""
        return subtree_usages(await self.store.tree(record.root_id))[record.id]

    async def _live_subagent(self, conversation_id: str, subagent_id: str) -> ConversationHost | None:
        """The live host of a sub-agent of ``conversation_id``'s tree; ``None`` when it is in the
        tree but not running. Raises ``SubagentNotFound`` when the tree has no such sub-agent."""
        record = await self.get(conversation_id)
        host = await self.host(record.root_id)
        target = host.find(subagent_id)
        if target is not None and target is not host:
            return target
        child = await self.store.get_conversation(subagent_id)
        if child is None or child.root_id != record.root_id or child.is_root:
            raise SubagentNotFound(subagent_id)
        return None

    @owned
    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        """Cancel one sub-agent (and its own sub-agents); its siblings and parent go on."""
        target = await self._live_subagent(conversation_id, subagent_id)
        if target is None:
            raise BadRequest(f"sub-agent {subagent_id!r} is not running", code="subagent_not_running")
        if target.task is None and target.managed:
            target.cancel_pending = True  # still being set up: it is cancelled as it starts
            return
        if target.task is None:
            # A peer's own sub-agent (Claude Code's): only the peer can stop it, if it offers a way.
            if target.stop_hook is None:
                raise BadRequest(
                    f"sub-agent {subagent_id!r} is run by an external agent that cannot cancel it alone; "
                    "interrupt the conversation instead",
                    code="subagent_not_cancellable",
                )
            try:
                await target.stop_hook()
            except BackendError as exc:
                raise Unavailable(
                    f"the agent running sub-agent {subagent_id!r} could not stop it: {exc.detail}",
                    code="subagent_cancel_failed",
                ) from exc
            return
        if not target.task.done():
            target.task.cancel("the sub-agent was cancelled")

    @owned
    async def steer_subagent(self, conversation_id: str, subagent_id: str, content: str) -> dict[str, Any]:
        """Hand a person's message to one running sub-agent, before its next model call. It is
        stored in the sub-agent's own stream as a user message (stamped, forwarded like its
        other events), never in its parent's. Returns the stored event."""
        target = await self._live_subagent(conversation_id, subagent_id)
        if target is None:
            raise SubagentNotRunning(f"sub-agent {subagent_id!r} is not running; it takes no message")
        reports = capabilities(target.record.agent) if target.managed else None
        if target.steer_hook is None:
            why = PEER_SUBAGENT if reports is None else reports.steer
            if reports is not None and reports.steer_by_hook:
                why = "its agent has not started yet; retry in a moment"
            if why is not None:
                raise SubagentNotSteerable(f"sub-agent {subagent_id!r} cannot take a message: {why}")
        if not target.accepts_messages:
            raise SubagentNotRunning(f"sub-agent {subagent_id!r} has finished its work; it takes no message")
        event = MessageEvent(role="user", source="user", content=content)
        if target.steer_hook is not None:
            try:
                await target.steer_hook(content)
            except TaskwireError as exc:
                raise SubagentNotSteerable(f"sub-agent {subagent_id!r} cannot take a message now: {exc.detail}") from exc
        else:
            # Into its inbox first, then queued for the store, with no await between: its run takes
            # it before its next model call, and the stream holds it before what that call brings.
            target.deliver_user_message(content)
        await target.emit(event, wait=False)
        await self.store.flush()
        return event.model_dump(mode="json", exclude_none=True)
