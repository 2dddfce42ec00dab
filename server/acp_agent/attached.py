"""``Conversations`` on a running taskwire server (``taskwire acp --url ...``): REST for commands,
the event socket for the feed.

The feed resumes after any drop (a restart, a replica going away, a slow-client close) with
``after_seq`` = the last ``seq`` it handed on, so nothing is lost and nothing comes twice.
Reads are retried while the server is unreachable; commands (a message, an interrupt) are not,
so a message is never sent twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, AsyncIterator
from urllib.parse import quote

import httpx
import websockets

from server.acp_agent.base import ConversationInfo, OnEvents, OnResume
from server.errors import (
    BadRequest,
    Conflict,
    ConversationNotFound,
    NotFound,
    TaskwireError,
    Unauthorized,
    Unavailable,
)
from server.events import Usage
from server.stream.close_codes import CloseCode

log = logging.getLogger(__name__)

HEADER = "X-Session-API-Key"
READ_RETRY_SECONDS = 30.0
"""How long a read keeps trying an unreachable server before it fails."""
MAX_BACKOFF = 5.0


class AttachedConversations:
    """Implements ``Conversations`` over a server's HTTP API. Call ``open`` first, ``close`` last."""

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.headers = {HEADER: api_key} if api_key else {}
        self.client = httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=timeout)
        self.forwarding = False

    async def open(self) -> None:
        """Reach the server once and learn whether it forwards sub-agent events."""
        info = (await self._read("GET", "/server_info")).json()
        self.forwarding = bool(info.get("forward_subagent_events"))
        await self._read("GET", "/api/conversations/count")  # the key is good

    async def close(self) -> None:
        await self.client.aclose()

    # -- commands and reads ---------------------------------------------------------------

    async def create(self, agent: dict[str, Any] | None, workspace: str | None) -> ConversationInfo:
        body: dict[str, Any] = {"run": False}
        if agent is not None:
            body["agent"] = agent
        if workspace is not None:
            body["workspace"] = workspace
        return ConversationInfo.of((await self._command("POST", "/api/conversations", json=body)).json())

    async def info(self, conversation_id: str) -> ConversationInfo:
        return ConversationInfo.of((await self._read("GET", _path(conversation_id))).json())

    async def send(self, conversation_id: str, text: str) -> None:
        await self._command("POST", _path(conversation_id, "events"), json={"role": "user", "content": text, "run": True})

    async def interrupt(self, conversation_id: str) -> None:
        await self._command("POST", _path(conversation_id, "interrupt"))

    async def tree_usage(self, conversation_id: str) -> Usage:
        total = Usage(**(await self._read("GET", _path(conversation_id))).json()["usage"])
        for entry in (await self._read("GET", _path(conversation_id, "subagents"))).json():
            total = total + Usage(**entry.get("usage") or {})
        return total

    async def history(self, conversation_id: str) -> AsyncIterator[list[dict[str, Any]]]:
        params: dict[str, Any] = {"limit": 100, "include_subagents": "true" if self.forwarding else "false"}
        while True:
            page = (await self._read("GET", _path(conversation_id, "events/search"), params=params)).json()
            yield page["items"]
            if not page.get("next_page_id"):
                return
            params["page_id"] = page["next_page_id"]

    async def list(self, page_id: str | None) -> tuple[list[ConversationInfo], str | None]:
        params = {"page_id": page_id} if page_id else {}
        page = (await self._read("GET", "/api/conversations/search", params=params)).json()
        return [ConversationInfo.of(item) for item in page["items"]], page.get("next_page_id")

    async def _command(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Once: a command that failed in transit may have run."""
        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unavailable(f"cannot reach taskwire at {self.url}: {exc!r}", code="server_unreachable") from exc
        return _checked(response)

    async def _read(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Retried with back-off while the server cannot be reached (it may be restarting)."""
        loop = asyncio.get_running_loop()
        deadline, attempt = loop.time() + READ_RETRY_SECONDS, 0
        while True:
            try:
                return _checked(await self.client.request(method, path, **kwargs))
            except httpx.TransportError as exc:
                if loop.time() > deadline:
                    raise Unavailable(f"cannot reach taskwire at {self.url}: {exc!r}", code="server_unreachable") from exc
            except Unavailable:
                if loop.time() > deadline:
                    raise
            attempt += 1
            await asyncio.sleep(min(MAX_BACKOFF, 0.1 * 2**attempt))

    # -- the feed -------------------------------------------------------------------------

    async def follow(self, conversation_id: str, after_seq: int, on_events: OnEvents, on_resume: OnResume) -> None:
        last, attempt = after_seq, 0
        while True:
            url = f"{self.url.replace('http', 'ws', 1)}/sockets/events/{quote(conversation_id, safe='')}"
            try:
                async with websockets.connect(
                    f"{url}?resend_mode=since&after_seq={last}", additional_headers=self.headers, max_size=None
                ) as socket:
                    async for message in socket:
                        attempt = 0
                        event = json.loads(message)
                        if not _is_record_past(event, last):
                            continue
                        if event.get("seq") is not None:
                            last = int(event["seq"])
                        await on_events([event])
            except websockets.ConnectionClosed as exc:
                _raise_if_refused(exc, conversation_id)
                log.info("event socket of %s closed (%s); resuming after seq %d", conversation_id, exc, last)
            except (OSError, websockets.InvalidHandshake, TimeoutError) as exc:
                log.warning("event socket of %s: %r; retrying", conversation_id, exc)
            on_resume()
            attempt += 1
            await asyncio.sleep(min(MAX_BACKOFF, 0.1 * 2**attempt))


def _path(conversation_id: str, tail: str = "") -> str:
    path = f"/api/conversations/{quote(conversation_id, safe='')}"
    return f"{path}/{tail}" if tail else path


def _is_record_past(event: dict[str, Any], last: int) -> bool:
    """Whether a frame is an event to hand on: not the ``full_state`` first frame, not an error
    frame (they have no ``kind``), not a stored event already handed on."""
    if "kind" not in event or event.get("key") == "full_state":
        return False
    seq = event.get("seq")
    return seq is None or int(seq) > last


def _raise_if_refused(exc: websockets.ConnectionClosed, conversation_id: str) -> None:
    code = exc.rcvd.code if exc.rcvd is not None else None
    reason = exc.rcvd.reason if exc.rcvd is not None else ""
    if code == CloseCode.UNAUTHORIZED:
        raise Unauthorized(f"the server refused the event socket: {reason}")
    if code == CloseCode.UNKNOWN_CONVERSATION:
        raise ConversationNotFound(conversation_id)
    if code == CloseCode.BAD_REQUEST:
        raise BadRequest(f"the server refused the event socket: {reason}")


def _checked(response: httpx.Response) -> httpx.Response:
    """The response, or the ``TaskwireError`` its ``{"detail", "code"}`` body names."""
    if response.status_code < 400:
        return response
    try:
        body = response.json()
        detail, code = str(body.get("detail")), body.get("code")
    except (ValueError, AttributeError):
        detail, code = response.text[:500] or response.reason_phrase, None
    status = response.status_code
    if status == 404:
        raise NotFound(detail, code=code)
    if status == 401:
        raise Unauthorized(detail, code=code)
    if status == 409:
        raise Conflict(detail, code=code)
    if status in (400, 413, 422):
        raise BadRequest(detail, code=code)
    if status == 503:
        raise Unavailable(detail, code=code)
    raise TaskwireError(f"taskwire answered {status}: {detail}", code=code or "server_error")
