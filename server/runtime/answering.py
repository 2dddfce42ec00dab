"""The runtime's permission commands: listing a tree's requests and answering one.

A mixin of ``runtime.manager.Runtime`` (its own module, so the runtime's class stays small):
``answer_permission`` is an ``@owned`` command, so an answer posted to any replica runs on the
one that owns the conversation, over the bus like every command; listing reads the store and
answers anywhere. The live side (waiting calls, first answer wins) is ``runtime/permissions.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InvalidPermissionAnswer
from ..permissions.answers import PermissionAnswer
from .ownership import owned
from .permissions import answer_below, ledger_below
from ..store import ConversationRecord, Store

if TYPE_CHECKING:
    from .conversation import ConversationHost


class PermissionCommands:
    """``Runtime``'s permission routes (``store``, ``get`` and ``host`` are the runtime's)."""

    store: Store

    async def get(self, conversation_id: str) -> ConversationRecord:
        raise NotImplementedError

    async def host(self, conversation_id: str) -> ConversationHost:
        raise NotImplementedError

    async def permissions(self, conversation_id: str, status: str = "pending") -> list[dict[str, Any]]:
        """Permission requests of ``conversation_id`` and every sub-agent below it, from the
        store (any replica answers): those still waiting, or (``status="all"``) every one."""
        ledger = await ledger_below(self.store, await self.get(conversation_id))
        return ledger.listed("all" if status == "all" else "pending")

    async def pending_state(self, record: ConversationRecord) -> dict[str, Any]:
        """``full_state``'s ``pending_permissions`` (the requests below ``record`` still
        waiting); nothing at all for a tree that never asked."""
        ledger = await ledger_below(self.store, record)
        return {"pending_permissions": [e.summary() for e in ledger.pending()]} if ledger.entries else {}

    @owned
    async def answer_permission(
        self, conversation_id: str, request_id: str, answer: dict[str, Any], answered_by: str
    ) -> dict[str, Any]:
        """Answer a waiting permission request of ``conversation_id``'s tree (below it) with
        ``answer`` (a ``PermissionAnswer`` body); returns the stored ``PermissionResolvedEvent``
        (``answer_below`` says which errors). ``answered_by`` names the surface (``rest``,
        ``socket``, ...)."""
        try:
            parsed = PermissionAnswer.model_validate(answer)
        except ValidationError as exc:  # the routes check first; a command over the bus may not
            raise InvalidPermissionAnswer(f"invalid answer: {exc.errors()[0]['msg']}") from None
        record = await self.get(conversation_id)
        host = await self.host(record.root_id)  # loading it closes what a dead process left
        event = await answer_below(self.store, host.permissions, record, request_id, parsed, answered_by)
        return event.model_dump(mode="json", exclude_none=True)
