"""``Client``: taskwire's REST API in a few thin calls, and the door to ``LiveEvents``.

Every call answers with the server's JSON (conversations as dicts, events as typed events) or
raises ``APIError`` with the server's status, stable ``code`` and readable ``detail``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from taskwire_client.errors import APIError, IncompatibleServer, Unreachable
from taskwire_client.frames import parse_frame
from taskwire_client.live import LiveEvents
from taskwire_client.events import Event
from taskwire_client.version import compatibility

HEADER = "X-Session-API-Key"
PAGE = 100
"""The largest page the server gives."""


@dataclass
class EventPage:
    """One page of an event search, and the id of the next (``None``: the last page)."""

    items: list[Event]
    next_page_id: str | None


class Client:
    """A taskwire server at ``url``, with ``api_key`` sent on every request and socket.
    Use ``async with Client(...) as client``; it owns one connection pool."""

    def __init__(self, url: str = "http://127.0.0.1:8000", *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.headers = {HEADER: api_key} if api_key else {}
        self._http = httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=timeout)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- conversations ------------------------------------------------------------------

    async def create(
        self,
        *,
        agent: dict[str, Any] | None = None,
        workspace: str | None = None,
        initial_message: str | None = None,
        run: bool | None = None,
    ) -> dict[str, Any]:
        """Start a conversation (``POST /api/conversations``); with ``initial_message`` it
        starts working on it unless ``run=False``. Returns the conversation's info."""
        body = {"agent": agent, "workspace": workspace, "initial_message": initial_message, "run": run}
        return await self._call("POST", "/api/conversations", json={k: v for k, v in body.items() if v is not None})

    async def get(self, conversation_id: str) -> dict[str, Any]:
        """A conversation's info: ``status``, ``usage``, ``last_seq``, ..."""
        return await self._call("GET", _path(conversation_id))

    async def conversations(self, *, status: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every root conversation, newest first, page after page."""
        page_id = None
        while True:
            items, page_id = await self.conversations_page(status=status, page_id=page_id)
            for item in items:
                yield item
            if not page_id:
                return

    async def conversations_page(
        self, *, status: str | None = None, page_id: str | None = None, limit: int = PAGE
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of root conversations, newest first, and the id of the next page (``None``:
        the last one)."""
        params = {"status": status, "page_id": page_id, "limit": limit}
        page = await self._call("GET", "/api/conversations/search", params=_present(params))
        return page["items"], page.get("next_page_id") or None

    async def send(self, conversation_id: str, content: str, *, run: bool = True) -> None:
        """Send a user message; with ``run`` the agent works on it (a run going on picks it up)."""
        await self._call("POST", _path(conversation_id, "events"), json={"role": "user", "content": content, "run": run})

    async def run(self, conversation_id: str) -> dict[str, Any]:
        return await self._call("POST", _path(conversation_id, "run"))

    async def pause(self, conversation_id: str) -> dict[str, Any]:
        return await self._call("POST", _path(conversation_id, "pause"))

    async def interrupt(self, conversation_id: str) -> dict[str, Any]:
        return await self._call("POST", _path(conversation_id, "interrupt"))

    async def delete(self, conversation_id: str) -> None:
        await self._call("DELETE", _path(conversation_id))

    # -- sub-agents -----------------------------------------------------------------------

    async def subagents(self, conversation_id: str) -> list[dict[str, Any]]:
        """The sub-agent tree, flat, parents before children."""
        return await self._call("GET", _path(conversation_id, "subagents"))

    async def cancel_subagent(self, conversation_id: str, subagent_id: str) -> None:
        """Cancel that sub-agent (and those below it); its parent goes on."""
        await self._call("POST", _path(conversation_id, "subagents", subagent_id, "cancel"))

    async def steer_subagent(self, conversation_id: str, subagent_id: str, content: str) -> dict[str, Any]:
        """Send a person's message to that running sub-agent, read before its next model call;
        returns the stored ``MessageEvent`` (its own stream holds it, never its parent's).
        ``APIError`` 409 ``subagent_not_running`` / ``subagent_not_steerable``, 404."""
        return await self._call("POST", _path(conversation_id, "subagents", subagent_id, "messages"),
                                json={"content": content})

    # -- permissions ------------------------------------------------------------------------

    async def permissions(self, conversation_id: str, *, status: str = "pending") -> list[dict[str, Any]]:
        """Permission requests of the conversation's tree (``status="all"``: answered ones
        too), oldest first: each request's fields, its ``status`` and, once answered, its
        ``resolution``."""
        return await self._call("GET", _path(conversation_id, "permissions"), params={"status": status})

    async def answer_permission(
        self,
        conversation_id: str,
        request_id: str,
        *,
        option_id: str | None = None,
        decision: str | None = None,
        always: bool = False,
        reason: str | None = None,
        via: str | None = None,
    ) -> Event:
        """Answer a waiting request with an ``option_id`` it offered, or a ``decision``
        (``allow``/``reject``, ``always`` for its ``*_always`` option); returns the
        ``PermissionResolvedEvent``. ``APIError`` 409 once it has an answer (the first one
        wins), 404 for an unknown request, 422 for an option it did not offer. ``via``: the
        surface a person answered on, when this client relays one (``acp``, ``agui``): the
        event's ``answered_by`` (default ``rest``)."""
        body = _present({"option_id": option_id, "decision": decision, "reason": reason})
        if always:
            body["always"] = True
        params = {"via": via} if via else None
        return _event(await self._call("POST", _path(conversation_id, "permissions", request_id), json=body, params=params))

    # -- events ---------------------------------------------------------------------------

    async def search_page(
        self, conversation_id: str, *, page_id: str | None = None, limit: int = PAGE, **filters: Any
    ) -> EventPage:
        """One page of ``GET .../events/search``. ``filters``: ``kind``, ``source``, ``body``,
        ``after_seq``, ``subagent_id``, ``parent_tool_use_id``, ``include_subagents``, ..."""
        params = _present({**filters, "page_id": page_id, "limit": limit})
        page = await self._call("GET", _path(conversation_id, "events", "search"), params=params)
        return EventPage([_event(item) for item in page["items"]], page.get("next_page_id"))

    async def search(self, conversation_id: str, **filters: Any) -> AsyncIterator[Event]:
        """Every event matching ``filters`` (as ``search_page``), page after page."""
        page_id = None
        while True:
            page = await self.search_page(conversation_id, page_id=page_id, **filters)
            for event in page.items:
                yield event
            page_id = page.next_page_id
            if page_id is None:
                return

    async def count(self, conversation_id: str, **filters: Any) -> int:
        """How many events match ``filters``."""
        return int(await self._call("GET", _path(conversation_id, "events", "count"), params=_present(filters)))

    def events(self, conversation_id: str, **options: Any) -> LiveEvents:
        """The conversation's events, live, resuming after any drop (see ``LiveEvents`` for
        ``after_seq``, ``subagents``, ``parent_tool_use_id``, ``deltas``, ``until_run_ends``,
        ``retry_for``)."""
        ws_base = "ws" + self.url[len("http"):] if self.url.startswith("http") else self.url
        return LiveEvents(ws_base, conversation_id, headers=self.headers, **options)

    # -- the server -------------------------------------------------------------------------

    async def server_info(self) -> dict[str, Any]:
        """``GET /server_info``: the server's name, version and public settings."""
        return await self._call("GET", "/server_info")

    async def check_server(self) -> str | None:
        """Whether this client speaks to the server (``taskwire_client.version``): ``None`` when
        it does, a warning when the server is newer; ``IncompatibleServer`` when it is older or
        not taskwire at all."""
        try:
            info = await self.server_info()
        except APIError as exc:
            raise IncompatibleServer(f"{self.url} is not a taskwire server ({exc.status} on /server_info)") from exc
        return compatibility(info)

    async def demo_scenarios(self, *, pace: float = 0.0) -> dict[str, Any]:
        """``GET /api/demo``: the scenarios the server offers, each with the body that starts it
        there (its script as the server names it, wherever the server was installed)."""
        return await self._call("GET", "/api/demo", params={"pace": pace} if pace > 0 else None)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"cannot reach {self.url}: {exc}") from exc
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            raise APIError(response.status_code, str(body.get("code") or "http_error"), str(body.get("detail") or response.text))
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise IncompatibleServer(f"{self.url} answered {method} {path} with a body that is not JSON: "
                                     "not a taskwire server") from None


def _path(conversation_id: str, *rest: str) -> str:
    return "/".join(["/api/conversations", quote(conversation_id, safe=""), *(quote(p, safe="") for p in rest)])


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _event(item: dict[str, Any]) -> Event:
    event = parse_frame(item)
    assert event is not None, item  # search answers events only
    return event
