"""``Conversations`` on a running taskwire server (``taskwire acp --url ...``), through
``taskwire_client``: its REST calls for commands, its ``LiveEvents`` for the feed.

The feed resumes after any drop (a restart, a replica going away, a slow-client close) from the
last ``seq`` it handed on, so nothing is lost and nothing comes twice. Reads are retried while
the server is unreachable; commands (a message, an interrupt) are not, so a message is never
sent twice. The client's errors become taskwire's here, once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

from .base import ConversationInfo, OnEvents, OnResume
from taskwire_client import APIError, Client, StreamRefused, Unreachable
from taskwire_client.frames import is_full_state
from ..errors import (
    BadRequest,
    Conflict,
    ConversationNotFound,
    NotFound,
    TaskwireError,
    Unauthorized,
    Unavailable,
)
from ..events import Event, Usage
from taskwire_client.close_codes import CloseCode

log = logging.getLogger(__name__)

READ_RETRY_SECONDS = 30.0
"""How long a read keeps trying an unreachable server before it fails."""
MAX_BACKOFF = 5.0
T = TypeVar("T")


class AttachedConversations:
    """Implements ``Conversations`` over a server's HTTP API. Call ``open`` first, ``close`` last."""

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.client = Client(self.url, api_key=api_key, timeout=timeout)
        self.forwarding = False

    async def open(self) -> None:
        """Reach the server once, learn whether it forwards sub-agent events, check the key."""
        info = await self._read(self.client.server_info)
        self.forwarding = bool(info.get("forward_subagent_events"))
        await self._read(lambda: self.client.conversations_page(limit=1))

    async def close(self) -> None:
        await self.client.aclose()

    # -- commands and reads ---------------------------------------------------------------

    async def create(self, agent: dict[str, Any] | None, workspace: str | None) -> ConversationInfo:
        created = await _translated(self.client.create(agent=agent, workspace=workspace, run=False))
        return ConversationInfo.of(created)

    async def info(self, conversation_id: str) -> ConversationInfo:
        return ConversationInfo.of(await self._read(lambda: self.client.get(conversation_id)))

    async def send(self, conversation_id: str, text: str) -> None:
        await _translated(self.client.send(conversation_id, text, run=True))

    async def interrupt(self, conversation_id: str) -> None:
        await _translated(self.client.interrupt(conversation_id))

    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        await _translated(self.client.cancel_subagent(conversation_id, subagent_id))

    async def steer_subagent(self, conversation_id: str, subagent_id: str, text: str) -> None:
        await _translated(self.client.steer_subagent(conversation_id, subagent_id, text))

    async def permissions(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self._read(lambda: self.client.permissions(conversation_id))

    async def answer_permission(self, conversation_id: str, request_id: str, body: dict[str, Any]) -> None:
        await _translated(self.client.answer_permission(conversation_id, request_id, via="acp", **body))

    async def tree_usage(self, conversation_id: str) -> Usage:
        total = Usage(**(await self._read(lambda: self.client.get(conversation_id)))["usage"])
        for entry in await self._read(lambda: self.client.subagents(conversation_id)):
            total = total + Usage(**entry.get("usage") or {})
        return total

    async def history(self, conversation_id: str) -> AsyncIterator[list[dict[str, Any]]]:
        page_id = None
        while True:
            page = await self._read(lambda: self.client.search_page(
                conversation_id, page_id=page_id, include_subagents="true" if self.forwarding else "false"))
            yield [_wire(event) for event in page.items]
            page_id = page.next_page_id
            if page_id is None:
                return

    async def list(self, page_id: str | None) -> tuple[list[ConversationInfo], str | None]:
        items, next_page_id = await self._read(lambda: self.client.conversations_page(page_id=page_id))
        return [ConversationInfo.of(item) for item in items], next_page_id

    async def _read(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call``, retried with back-off while the server cannot be reached (it may be
        restarting) for up to ``READ_RETRY_SECONDS``."""
        loop = asyncio.get_running_loop()
        deadline, attempt = loop.time() + READ_RETRY_SECONDS, 0
        while True:
            try:
                return await _translated(call())
            except Unavailable:
                if loop.time() > deadline:
                    raise
            attempt += 1
            await asyncio.sleep(min(MAX_BACKOFF, 0.1 * 2**attempt))

    # -- the feed -------------------------------------------------------------------------

    async def follow(self, conversation_id: str, after_seq: int, on_events: OnEvents, on_resume: OnResume) -> None:
        last, attempt = after_seq, 0
        while True:
            live = self.client.events(conversation_id, after_seq=last, retry_for=None)
            try:
                async with live:
                    async for event in live:
                        if is_full_state(event):
                            if live.connections > 1:
                                on_resume()  # deltas streamed while it was away are gone
                            continue
                        attempt = 0
                        await on_events([_wire(event)])
            except StreamRefused as exc:
                raise _refusal(exc, conversation_id) from exc
            except Unreachable as exc:  # its first connection failed: the server is away
                log.warning("event socket of %s: %s; retrying", conversation_id, exc)
            last = live.last_seq
            on_resume()
            attempt += 1
            await asyncio.sleep(min(MAX_BACKOFF, 0.1 * 2**attempt))


def _wire(event: Event) -> dict[str, Any]:
    """A typed event back in its wire form, as the projection reads it."""
    return json.loads(event.to_json())


async def _translated(call: Awaitable[T]) -> T:
    """The client's errors as taskwire's (``server/errors.py``)."""
    try:
        return await call
    except APIError as exc:
        raise _api_error(exc) from exc
    except Unreachable as exc:
        raise Unavailable(str(exc), code="server_unreachable") from exc


def _api_error(exc: APIError) -> TaskwireError:
    kinds: dict[int, type[TaskwireError]] = {404: NotFound, 401: Unauthorized, 409: Conflict, 503: Unavailable}
    if exc.status in (400, 413, 422):
        return BadRequest(exc.detail, code=exc.code)
    if exc.status in kinds:
        return kinds[exc.status](exc.detail, code=exc.code)
    return TaskwireError(f"taskwire answered {exc.status}: {exc.detail}", code=exc.code)


def _refusal(exc: StreamRefused, conversation_id: str) -> TaskwireError:
    if exc.code == CloseCode.UNAUTHORIZED:
        return Unauthorized(f"the server refused the event socket: {exc.reason}")
    if exc.code == CloseCode.UNKNOWN_CONVERSATION:
        return ConversationNotFound(conversation_id)
    return BadRequest(f"the server refused the event socket: {exc.reason}")
