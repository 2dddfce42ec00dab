"""The sub-agent half of ``ConversationHost``: starting a child conversation for a sub-agent,
recording its end, and finding one in the live tree.

A mixin (as ``spending.py`` is), so the host's class stays small.
"""

from __future__ import annotations

import asyncio
from typing import Any, Self

from ..events import SubagentFinishedEvent, SubagentStartedEvent, Usage
from taskwire_client.ids import new_id
from .forwarding import forwarder
from ..store import ConversationRecord


class SubagentHosts:
    """``ConversationHost``'s sub-agents (its attributes are the host's)."""

    # -- sub-agents -----------------------------------------------------------------------

    async def start_subagent(
        self,
        parent_tool_use_id: str,
        *,
        subagent_type: str,
        description: str,
        agent: dict[str, Any] | None = None,
        managed: bool = False,
        cwd: str | None = None,
    ) -> Self:
        """A child conversation for a sub-agent; ``managed``: taskwire's task manager runs it
        (so it can be cancelled even before its run task exists), not a peer agent; ``cwd``: the
        folder a peer's sub-agent works in, when it is not the parent's."""
        label = await self._labels.next(self._count_children)
        record = ConversationRecord(
            id=new_id(),
            root_id=self.root_id,
            parent_id=self.conversation_id,
            parent_tool_use_id=parent_tool_use_id,
            subagent_type=subagent_type,
            description=description,
            agent=agent if agent is not None else self.record.agent,
            workspace=str(self.workspace),
            status="idle",
            subagent_status="running",
            label=label,
        )
        child = type(self)(
            record,
            store=self._store,
            settings=self.settings,
            publisher=self._publisher,
            sink=forwarder(self._publisher, self.settings.forward_subagent_events),
            backend_factory=self._backend_factory,
            parent=self,
            new_stream=managed,  # a peer's sub-agent never builds a backend: nothing to keep for
        )
        child.managed = managed
        child.spent = Usage()
        self._root().has_subagents = True  # type: ignore[attr-defined]
        # Findable (and so cancellable) from the moment its row can be read.
        self.children[record.id] = child
        started = False

        async def start() -> None:
            nonlocal started
            await self._store.create_conversation(record)
            await child.emit(
                SubagentStartedEvent(
                    subagent_type=subagent_type,
                    description=description,
                    cwd=cwd,
                    parent_subagent_id=self.conversation_id if self.is_subagent else None,
                    label=record.label,
                )
            )
            started = True

        try:
            await child.whole(start())
        except asyncio.CancelledError:
            if started:  # started whole before the cancel landed: end it too
                await self.finish_subagent(child, status="cancelled", result="cancelled before it ran")
            else:
                self.children.pop(record.id, None)
            raise
        except BaseException:
            self.children.pop(record.id, None)
            raise
        return child

    async def finish_subagent(
        self, child: Self, *, status: str, result: str, usage: Usage | None = None
    ) -> None:
        stop = child.budget_stop  # a budget stopped it (its own or an ancestor's)
        child.close_inbox()

        async def finish() -> None:
            await self._store.flush()  # as in set_status: the row never runs ahead of the stream
            if stop is not None:  # why it stopped: the row's alone (the event names the limit)
                child.record = await self._store.update_conversation(
                    child.conversation_id, held=child.record, status_reason=stop.describe()
                )
            # The event sets the row's outcome in its own transaction (``EventRecord.row_update``).
            await child.emit(
                SubagentFinishedEvent(
                    status=status,  # type: ignore[arg-type]
                    result=result,
                    usage=usage if usage is not None else child.record.usage,
                    stop_reason=stop.limit if stop is not None else None,
                    budget=stop.public() if stop is not None else None,
                )
            )
            child.record = child.record.model_copy(update={"subagent_status": status, "result": result})

        try:
            await child.whole(finish())
        finally:
            await child.close()
            self.children.pop(child.conversation_id, None)

    async def _count_children(self) -> int:
        return sum(1 for record in await self._store.tree(self.root_id) if record.parent_id == self.conversation_id)

    def subagent_slots(self, limit: int) -> asyncio.Semaphore:
        """Bounds how many sub-agents of this conversation run at once."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(limit)
        return self._slots

    def find(self, conversation_id: str) -> Self | None:
        """This conversation or a live descendant with that id."""
        if conversation_id == self.conversation_id:
            return self
        for child in self.children.values():
            found = child.find(conversation_id)
            if found is not None:
                return found
        return None

