"""The runtime's sub-agent commands: listing a tree's sub-agents and cancelling one.

A mixin of ``runtime.manager.Runtime`` (as ``answering.py`` is), so the runtime's class stays
small. ``cancel_subagent`` is an ``@owned`` command: posted to any replica, it runs on the one
that owns the conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import BackendError, BadRequest, SubagentNotFound, Unavailable
from .ownership import owned
from .tree import subagent_entries
from .work_state import add_work_states
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

    @owned
    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        """Cancel one sub-agent (and its own sub-agents); its siblings and parent go on."""
        record = await self.get(conversation_id)
        host = await self.host(record.root_id)
        target = host.find(subagent_id)
        if target is None or target is host:
            child = await self.store.get_conversation(subagent_id)
            if child is None or child.root_id != record.root_id or child.is_root:
                raise SubagentNotFound(subagent_id)
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
