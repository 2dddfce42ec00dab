"""LLM calls over HTTP whose answers stream as Server-Sent Events, retried as providers need.

Non-2xx answers and broken event data leave here as ``LLMError`` with a readable reason, the
transient ones as ``TransientLLMError`` (retried by ``SSEChatClient.complete`` under its
``RetryPolicy``); the connections are ``ModelHTTP``'s (``transport.py``). ``SSEChatClient`` is
the base of ``OpenAILLM`` and ``AnthropicLLM``: each says how to build a body and how to
assemble the streamed answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ..errors import LLMError
from .base import CallAbandoned, CallObserver, LLMRequest, LLMResponse, OnDelta, RetryNotice
from .gates import ProviderGates
from .transport import ModelHTTP, Timeouts
from .retry import (
    RetryPolicy,
    TransientLLMError,
    next_delay,
    retry_after_seconds,
    retryable_status,
    should_retry_header,
)

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
        http: ModelHTTP | None = None,
        *,
        retry: RetryPolicy | None = None,
        stall_timeout: float | None = None,
        gates: ProviderGates | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        """``http``: the server's model client (``ModelHTTP``), shared with other agents and
        left open by ``aclose``; without it the model gets a client of its own. ``timeout``: seconds to
        connect, send and wait for a pooled connection; ``stall_timeout``: seconds without a
        byte of the answer (before its first or between two) after which the attempt is
        abandoned and retried (default ``timeout``). ``retry``: how transient failures are
        retried (default ``RetryPolicy()``). ``gates``: the server's shared rate limits and
        concurrency caps (``ProviderGates``); without it the model keeps its own."""
        self.model = model
        self.url = f"{(base_url or self.default_base_url).rstrip('/')}{self.path}"
        self._headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self.auth_headers(api_key),
        }
        self._timeouts = Timeouts(connect=timeout, stall=stall_timeout if stall_timeout is not None else timeout)
        self._owned = http is None
        self._client = http if http is not None else ModelHTTP()
        self.retry = retry or RetryPolicy()
        key = hashlib.sha256((api_key or "").encode()).hexdigest()[:16]  # rate limits are per key
        self._gate = (gates or ProviderGates()).gate(self.url, key, max_concurrency)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Headers that carry ``api_key`` (and any the API requires on every call)."""
        raise NotImplementedError

    def request_body(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body for ``request``, built in a fixed key order."""
        raise NotImplementedError

    def new_stream(self) -> StreamAssembler:
        """A fresh assembler for one answer."""
        raise NotImplementedError

    async def complete(
        self, request: LLMRequest, on_delta: OnDelta | None = None, observer: CallObserver | None = None
    ) -> LLMResponse:
        body = encode_body(self.request_body(request))
        wait = observer.wait if observer is not None else _sleep
        policy, started, attempt = self.retry, time.monotonic(), 1
        while True:
            if not await self._gate.open(wait):
                raise CallAbandoned("the run is pausing")
            streamed = Streamed(on_delta)
            await self._gate.acquire()
            try:
                return await self._attempt(body, streamed if on_delta is not None else None)
            except TransientLLMError as exc:
                failure = exc
            finally:
                self._gate.release()
            if failure.status == 429 and failure.retry_after is not None:
                self._gate.hold(failure.retry_after)  # every agent of this server waits it out
            delay = next_delay(policy, attempt, failure.retry_after)
            elapsed = time.monotonic() - started
            if attempt >= policy.max_attempts or elapsed + delay > policy.max_seconds:
                raise LLMError(_gave_up(failure, attempt, elapsed, delay, policy)) from failure
            attempt += 1
            if observer is not None:
                await observer.retrying(RetryNotice(
                    attempt=attempt, max_attempts=policy.max_attempts, delay=delay, reason=failure.reason,
                    error=failure.detail, status=failure.status, discard_text=streamed.any,
                ))
            if not await wait(delay):
                raise CallAbandoned("the run is pausing")

    async def _attempt(self, body: bytes, on_delta: OnDelta | None) -> LLMResponse:
        """One request and its whole answer."""
        stream = self.new_stream()
        after_done = 0
        async with aclosing(stream_events(self._client, self.url, body, self._headers, self._timeouts)) as events:
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


class Streamed:
    """Passes text fragments on and remembers whether any was (so a retry can say to drop it)."""

    __slots__ = ("_on_delta", "any")

    def __init__(self, on_delta: OnDelta | None) -> None:
        self._on_delta = on_delta
        self.any = False

    async def __call__(self, text: str) -> None:
        self.any = True
        if self._on_delta is not None:
            await self._on_delta(text)


async def _sleep(seconds: float) -> bool:
    await asyncio.sleep(seconds)
    return True


def _gave_up(failure: TransientLLMError, attempt: int, elapsed: float, delay: float, policy: RetryPolicy) -> str:
    if policy.max_retries == 0:
        return failure.detail
    if attempt >= policy.max_attempts:
        return f"{failure.detail} (gave up after {attempt} attempts in {elapsed:.0f} s)"
    return (f"{failure.detail} (gave up after {attempt} attempt(s): waiting {delay:.0f} s more would pass "
            f"the {policy.max_seconds:.0f} s retry limit)")


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as sent: compact JSON, keys in the order the body was built, so
    identical requests are byte-identical."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def stream_events(
    client: ModelHTTP, url: str, body: bytes, headers: Mapping[str, str], timeouts: Timeouts,
) -> AsyncIterator[SSEvent]:
    """POST ``body`` (encoded) to ``url`` and yield the answer's events as they arrive.
    Failures another attempt may cure raise ``TransientLLMError``; the rest ``LLMError``."""
    async with client.post(url, body, headers, timeouts) as answer:
        if answer.status >= 300:
            raise http_error(url, answer.status, answer.headers, await answer.read())
        async for event in _parse(answer.lines()):
            yield event


def http_error(url: str, status: int, headers: Mapping[str, str], raw: bytes) -> LLMError:
    """The error for a non-2xx answer: transient (with the provider's wait) when worth
    another attempt, else final; either way with the provider's own message."""
    message = f"LLM at {url} answered HTTP {status}: {_error_message(raw)}"
    retry = should_retry_header(headers)
    if retry if retry is not None else retryable_status(status):
        return TransientLLMError(message, reason=str(status), status=status, retry_after=retry_after_seconds(headers))
    return LLMError(message)


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
