"""LLM calls over HTTP whose answers stream as Server-Sent Events, with httpx.

The one place the HTTP LLM clients meet httpx: transport failures, non-2xx answers and broken
event data all leave here as ``LLMError`` with a readable reason. ``SSEChatClient`` is the
base of ``OpenAILLM`` and ``AnthropicLLM``: each says how to build a body and how to assemble
the streamed answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import httpx

from ..errors import LLMError
from .base import LLMRequest, LLMResponse, OnDelta

_MAX_ERROR_TEXT = 500
_AFTER_DONE = 8
"""Events read past an answer's end (``[DONE]``, ``message_stop``) before the stream is cut."""


@dataclass(frozen=True)
class SSEvent:
    """One Server-Sent Event: its ``event`` name (``None`` when unnamed) and ``data``."""

    event: str | None
    data: str

    def json(self) -> dict[str, Any]:
        """``data`` parsed as a JSON object; ``LLMError`` if it is not one."""
        try:
            value = json.loads(self.data)
        except ValueError as exc:
            raise LLMError(f"malformed stream: event data is not JSON: {self.data[:200]!r}") from exc
        if not isinstance(value, dict):
            raise LLMError(f"malformed stream: event data is not an object: {self.data[:200]!r}")
        return value


class StreamAssembler(Protocol):
    """Builds one answer from its events."""

    done: bool
    """Set by ``feed`` once the answer is complete (later events are not read)."""

    def feed(self, event: SSEvent) -> str:
        """Take one event; return its text fragment ('' if none). May raise ``LLMError``."""
        ...

    def response(self) -> LLMResponse:
        """The whole answer; ``LLMError`` if the stream ended too early."""
        ...


class SSEChatClient:
    """An LLM reached by one POST per call whose answer streams back as SSE.

    Subclasses set ``default_base_url`` and ``path`` (appended to the base URL) and say how
    to authenticate, build a body and assemble an answer.
    """

    default_base_url: ClassVar[str]
    path: ClassVar[str]

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        """``http``: a client shared with other agents (``shared_client``), left open by
        ``aclose``; without it the model gets a client of its own."""
        self.model = model
        self.url = f"{(base_url or self.default_base_url).rstrip('/')}{self.path}"
        self._headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self.auth_headers(api_key),
        }
        self._timeout = httpx.Timeout(timeout)
        self._owned = http is None
        self._client = http if http is not None else httpx.AsyncClient(timeout=self._timeout)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Headers that carry ``api_key`` (and any the API requires on every call)."""
        raise NotImplementedError

    def request_body(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body for ``request``, built in a fixed key order."""
        raise NotImplementedError

    def new_stream(self) -> StreamAssembler:
        """A fresh assembler for one answer."""
        raise NotImplementedError

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        stream = self.new_stream()
        body = self.request_body(request)
        after_done = 0
        async with aclosing(stream_events(self._client, self.url, body, self._headers, self._timeout)) as events:
            async for event in events:
                if stream.done:
                    # Read on to the stream's end (the answer is whole): a response left unread
                    # closes its connection, and every call paid a new one. A server that goes
                    # on past a few events is cut off.
                    after_done += 1
                    if after_done > _AFTER_DONE:
                        break
                    continue
                try:
                    delta = stream.feed(event)
                except (TypeError, ValueError, AttributeError, KeyError) as exc:
                    raise LLMError(f"malformed stream: unexpected event {event.data[:200]!r}") from exc
                if delta and on_delta is not None:
                    await on_delta(delta)
        return stream.response()

    async def aclose(self) -> None:
        if self._owned:
            await self._client.aclose()


def shared_client(timeout: float = 120.0) -> httpx.AsyncClient:
    """One client for every agent's model calls on a server: a new ``httpx.AsyncClient`` builds
    an SSL context (about 40 ms of CPU here), which made each agent's start cost more than all
    its model calls; shared, connections to the model are reused across agents too. No bound on
    connections (as one client per agent had none). At most 16 are kept idle: httpcore 1.0.9's
    pool scans every connection for each idle one whenever a request starts or ends, so with
    hundreds kept idle each model call cost ~16 ms of CPU (measured at 100 concurrent calls);
    with 16, 1.7 ms."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=16)
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), limits=limits)


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as sent: compact JSON, keys in the order the body was built, so
    identical requests are byte-identical."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def stream_events(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str],
    timeout: httpx.Timeout | None = None,
) -> AsyncIterator[SSEvent]:
    """POST ``body`` to ``url`` and yield the answer's events as they arrive (``timeout``: this
    call's, else the client's)."""
    try:
        chosen = timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT
        async with client.stream("POST", url, content=encode_body(body), headers=headers, timeout=chosen) as response:
            if response.status_code >= 300:
                raw = await response.aread()
                raise LLMError(
                    f"LLM at {url} answered HTTP {response.status_code}: {_error_message(raw)}"
                )
            async for event in _parse(response.aiter_lines()):
                yield event
    except httpx.TimeoutException as exc:
        raise LLMError(f"LLM at {url} timed out ({type(exc).__name__})") from exc
    except httpx.HTTPError as exc:
        raise LLMError(f"LLM request to {url} failed: {type(exc).__name__}: {exc}") from exc


async def _parse(lines: AsyncIterator[str]) -> AsyncIterator[SSEvent]:
    name: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield SSEvent(name, "\n".join(data))
            name, data = None, []
        elif line.startswith(":"):
            continue  # a comment, e.g. a keep-alive
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        yield SSEvent(name, "\n".join(data))


def _error_message(raw: bytes) -> str:
    # Both dialects put the reason at error.message; fall back to the raw text.
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:_MAX_ERROR_TEXT] or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        kind = error.get("type")
        return f"{kind}: {error['message']}" if kind else str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data["detail"]
    return text[:_MAX_ERROR_TEXT]


def parse_arguments(raw: str, tool: str) -> dict[str, Any]:
    """A tool call's streamed arguments as an object (``{}`` when empty)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise LLMError(f"malformed stream: arguments of tool {tool!r} are not JSON: {raw[:200]!r}") from exc
    if not isinstance(value, dict):
        raise LLMError(f"malformed stream: arguments of tool {tool!r} are not a JSON object")
    return value
