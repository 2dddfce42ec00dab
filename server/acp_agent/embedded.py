"""``Conversations`` on a runtime this process hosts (``taskwire acp`` without ``--url``).

The feed is the event socket's, without the socket: the same ``EventStream`` over the same
store and bus (``taskwire.api.sockets.open_stream`` and ``pump``), so the ACP session sees what a
socket client of this conversation would, in the same order.
"""

from __future__ import annotations

import json
import logging
from typing import Any, AsyncIterator

from pydantic import ValidationError

from .base import ConversationInfo, OnEvents, OnResume
from ..api.schemas import CreateConversation
from ..api.services import Services
from ..api.sockets import open_stream, pump
from ..errors import BadRequest
from ..events import Usage
from ..store import ConversationRecord, EventQuery
from ..store.base import MAX_PAGE
from ..stream.params import StreamParams

log = logging.getLogger(__name__)


class EmbeddedConversations:
    """Implements ``Conversations`` on ``services`` (see ``taskwire.api.services.hosted``)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.runtime = services.runtime
        self.store = services.store
        self.forwarding = services.settings.forward_subagent_events

    async def create(self, agent: dict[str, Any] | None, workspace: str | None) -> ConversationInfo:
        try:
            # The REST API's own schema: an agent spec reads the same in both places.
            fields = {"workspace": workspace, "run": False, **({"agent": agent} if agent is not None else {})}
            body = CreateConversation.model_validate(fields)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise BadRequest(f"invalid conversation: {problems}", code="invalid_request") from exc
        # The editor that started this process over stdio is its operator: the folder it has
        # open is its to work in, wherever it lies (a remote server confines it instead).
        record = await self.runtime.create(
            body.agent.model_dump(exclude_none=True), workspace=body.workspace, run=False, confined=False
        )
        return await self._info(record)

    async def info(self, conversation_id: str) -> ConversationInfo:
        return await self._info(await self.runtime.get(conversation_id))

    async def _info(self, record: ConversationRecord, *, with_seq: bool = True) -> ConversationInfo:
        return ConversationInfo(
            id=record.id,
            status=record.status,
            last_seq=await self.store.last_seq(record.root_id) if with_seq else 0,
            is_root=record.is_root,
            workspace=record.workspace,
            title=record.title,
            updated_at=record.updated_at.isoformat().replace("+00:00", "Z"),
        )

    async def send(self, conversation_id: str, text: str) -> None:
        await self.runtime.send_message(conversation_id, text, run=True)

    async def interrupt(self, conversation_id: str) -> None:
        await self.runtime.interrupt(conversation_id)

    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        await self.runtime.cancel_subagent(conversation_id, subagent_id)

    async def steer_subagent(self, conversation_id: str, subagent_id: str, text: str) -> None:
        await self.runtime.steer_subagent(conversation_id, subagent_id, text)

    async def permissions(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self.runtime.permissions(conversation_id)

    async def answer_permission(self, conversation_id: str, request_id: str, body: dict[str, Any]) -> None:
        await self.runtime.answer_permission(conversation_id, request_id, body, "acp")

    async def tree_usage(self, conversation_id: str) -> Usage:
        record = await self.runtime.get(conversation_id)
        total = Usage()
        for member in await self.store.tree(record.root_id):
            total = total + member.usage
        return total

    async def history(self, conversation_id: str) -> AsyncIterator[list[dict[str, Any]]]:
        record = await self.runtime.get(conversation_id)
        # The socket's view: the whole tree with forwarding on, the root's own stream without.
        query = EventQuery(record.root_id, conversation_ids=None if self.forwarding else [record.id])
        page_id = None
        while True:
            page = await self.store.search(query, limit=MAX_PAGE, page_id=page_id)
            yield [json.loads(r.json) for r in page.items]
            page_id = page.next_page_id
            if page_id is None:
                return

    async def follow(self, conversation_id: str, after_seq: int, on_events: OnEvents, on_resume: OnResume) -> None:
        conversation = await self.runtime.get(conversation_id)
        settings = self.services.settings

        async def send(frames: list[str]) -> None:
            if frames:
                await on_events([json.loads(frame) for frame in frames])

        while True:
            params = StreamParams(resend_mode="since", after_seq=after_seq)
            async with self.services.bus.subscribe(conversation.root_id, maxsize=settings.ws_queue_size) as subscription:
                stream = await open_stream(self.store, settings, conversation, params)
                code, reason = await pump(stream, subscription, self.store, send)
            # Only a bus overflow ends the stream (the client was a whole queue behind): resume.
            log.info("feed of %s closed (%s: %s); resuming after seq %d", conversation_id, code, reason, stream.resume_seq)
            after_seq = stream.resume_seq
            on_resume()

    async def list(self, page_id: str | None) -> tuple[list[ConversationInfo], str | None]:
        page = await self.store.search_conversations(page_id=page_id)
        return [await self._info(r, with_seq=False) for r in page.items], page.next_page_id
