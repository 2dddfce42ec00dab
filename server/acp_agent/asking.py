"""The editor asked, one ``session/request_permission`` per waiting request of the tree.

Each ``Ask`` the projection hands out becomes a task that sends the request to the editor and
answers the taskwire request with what the editor chose (``answered_by: "acp"``). A
``Settled`` (the request was answered elsewhere first, timed out or was cancelled) cancels that
task: ACP has no way to withdraw a request sent to the client, so the editor's dialog stays
until it answers or the call's next ``tool_call_update`` moves it on, and its late answer finds
no pending request and is dropped. During ``session/load``'s replay asks are held, and only those
still waiting when the replay ends are sent.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import PermissionOption, ToolCallUpdate
from pydantic import ValidationError

from ..acp.permissions import answer_body, with_details
from ..acp.updates import Ask, Settled
from .base import Conversations
from ..errors import Conflict, NotFound, TaskwireError

log = logging.getLogger(__name__)

POST_GRACE = 10.0
"""Seconds a closing session waits for answers the editor gave to reach taskwire."""


class EditorAsks:
    """The permission requests of one ACP session that the editor is asked about."""

    def __init__(self, session_id: str, conversations: Conversations, client: Client) -> None:
        self.session_id = session_id
        self.conversations = conversations
        self.client = client
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._held: dict[str, Ask] = {}
        self._posting: set[asyncio.Future[Any]] = set()
        """Answers the editor gave, on their way to taskwire: never cut off by ``close``."""

    def take(self, output: Ask | Settled, *, replaying: bool = False) -> None:
        """An ask to send (held while ``replaying``), or a request that no longer waits."""
        if isinstance(output, Settled):
            self._held.pop(output.request_id, None)
            task = self._asking.pop(output.request_id, None)
            if task is not None:
                task.cancel()
        elif replaying:
            self._held[output.request_id] = output
        elif output.request_id not in self._asking:
            task = asyncio.create_task(self._ask(output), name=f"acp ask {output.request_id}")
            self._asking[output.request_id] = task
            task.add_done_callback(lambda done, rid=output.request_id: self._forget(rid, done))

    def release(self) -> None:
        """The replay is over: ask about what still waits."""
        held, self._held = self._held, {}
        for ask in held.values():
            self.take(ask)

    async def close(self) -> None:
        """Stop asking (the requests go on waiting for another answer); answers the editor
        already gave are delivered first (for at most ``POST_GRACE`` seconds)."""
        tasks = list(self._asking.values())
        self._asking.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._posting:
            await asyncio.wait(set(self._posting), timeout=POST_GRACE)

    def _forget(self, request_id: str, task: asyncio.Task[None]) -> None:
        if self._asking.get(request_id) is task:
            del self._asking[request_id]

    async def _ask(self, ask: Ask) -> None:
        try:
            if ask.needs_details:
                found = await self._details(ask)
                if found is None:
                    return
                ask = found
            response = await self.client.request_permission(
                session_id=ask.session_id or self.session_id,
                tool_call=ToolCallUpdate.model_validate(ask.tool_call),
                options=[PermissionOption.model_validate(option) for option in ask.options],
                taskwire={"requestId": ask.request_id},
            )
            body = answer_body(response.outcome.model_dump(by_alias=True), ask.options)
            if body is None:
                log.warning("session %s: the editor cancelled request %s, which offers no reject option; it waits on",
                            self.session_id, ask.request_id)
                return
            # The editor answered: deliver it even if the session closes meanwhile (an editor
            # that quits right after answering must not leave the tree waiting).
            posting = asyncio.ensure_future(self.conversations.answer_permission(self.session_id, ask.request_id, body))
            self._posting.add(posting)
            posting.add_done_callback(self._posting.discard)
            await asyncio.shield(posting)
        except (Conflict, NotFound):
            log.info("session %s: request %s was answered elsewhere first", self.session_id, ask.request_id)
        except TaskwireError as exc:  # an option it did not offer, taskwire away: the request waits on
            log.warning("session %s: the editor's answer to %s was refused: %s", self.session_id, ask.request_id,
                        exc.detail)
        except RequestError as exc:
            log.warning("session %s: the editor failed request %s: %s", self.session_id, ask.request_id, exc)
        except ValidationError as exc:  # the editor's answer is not a RequestPermissionResponse
            log.warning("session %s: the editor's answer to %s is malformed: %s", self.session_id, ask.request_id,
                        exc.errors()[0]["msg"])
        except ConnectionError:
            log.info("session %s: the editor is gone; request %s waits on", self.session_id, ask.request_id)

    async def _details(self, ask: Ask) -> Ask | None:
        """The request's options, read from taskwire (its event was not in the feed)."""
        listed = await self.conversations.permissions(self.session_id)
        request = next((r for r in listed if r.get("request_id") == ask.request_id), None)
        if request is None:
            return None  # answered meanwhile
        return with_details(ask, request)
