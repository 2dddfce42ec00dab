"""Webhooks (``OH_WEBHOOKS``): batched, retried POSTs of published events to app servers.

Every record the runtime publishes (the root's events, and sub-agents' events when forwarding
is on, stamped) is queued for each receiver. A receiver that is down or slow never slows the
agent: each has a bounded queue; when it is full the oldest queued events are dropped, counted
and logged. Delivery is at least once (a retry after a lost response repeats a batch): receivers
de-duplicate by event ``id``.

Body of each POST::

    {"events": [{"conversation_id": "<root id>", "event": {...the event...}}, ...]}
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI

from ..events import EventRecord
from ..settings import WebhookSpec

log = logging.getLogger(__name__)

SKIPPED_BY_DEFAULT = {"StreamingDeltaEvent"}
"""Token deltas are too chatty for webhooks unless a receiver asks for them by kind."""


def receiver_host(url: str) -> str:
    """Where a webhook goes, at most: scheme, host and port (its path and query may hold a
    token, so public routes show only this)."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port out of range: the URL never worked anyway
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


class WebhookDispatcher:
    """Delivers records to one receiver in batches, in publish order."""

    def __init__(self, spec: WebhookSpec, client: httpx.AsyncClient) -> None:
        self.spec = spec
        self._client = client
        self._queue: deque[EventRecord] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.delivered = 0
        self.dropped = 0
        self.failed_batches = 0

    def offer(self, record: EventRecord) -> None:
        """Queue a record (never blocks); drops the oldest when the queue is full."""
        if self.spec.kinds is not None:
            if record.kind not in self.spec.kinds:
                return
        elif record.kind in SKIPPED_BY_DEFAULT:
            return
        if len(self._queue) >= self.spec.queue_size:
            self._queue.popleft()
            self.dropped += 1
            if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                log.warning("webhook %s is behind: %d events dropped so far", self.spec.url, self.dropped)
        self._queue.append(record)
        self._wakeup.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._deliver_forever(), name=f"webhook {self.spec.url}")

    async def stop(self, flush_timeout: float = 5.0) -> None:
        """Try to deliver what is queued, for at most ``flush_timeout`` seconds, then stop."""
        if self._task is None:
            return
        try:
            async with asyncio.timeout(flush_timeout):
                while self._queue:
                    await self._send_next_batch()
        except (TimeoutError, httpx.HTTPError):
            pass
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        if self._queue:
            log.warning("webhook %s: %d events not delivered at shutdown", self.spec.url, len(self._queue))

    def status(self) -> dict[str, Any]:
        return {
            "host": receiver_host(self.spec.url),
            "url": self.spec.url,
            "queued": len(self._queue),
            "delivered": self.delivered,
            "dropped": self.dropped,
            "failed_batches": self.failed_batches,
        }

    async def _deliver_forever(self) -> None:
        while True:
            if not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            if len(self._queue) < self.spec.batch_size:
                await asyncio.sleep(self.spec.flush_interval)  # let a batch fill
            await self._send_next_batch()

    async def _send_next_batch(self) -> None:
        batch = [self._queue.popleft() for _ in range(min(self.spec.batch_size, len(self._queue)))]
        if not batch:
            return
        items = ",".join(f'{{"conversation_id":"{r.root_id}","event":{r.json}}}' for r in batch)
        body = f'{{"events":[{items}]}}'.encode()
        headers = {"Content-Type": "application/json", **self.spec.headers}
        delay = 0.5
        for attempt in range(self.spec.max_retries + 1):
            try:
                response = await self._client.post(self.spec.url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    self.delivered += len(batch)
                    return
                reason = f"HTTP {response.status_code}"
                if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
                    break  # the receiver refuses this batch; retrying will not change its mind
            if attempt < self.spec.max_retries:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        self.failed_batches += 1
        self.dropped += len(batch)
        log.warning("webhook %s: dropped a batch of %d events (%s)", self.spec.url, len(batch), reason)


async def start_webhooks(app: FastAPI) -> Callable[[], Awaitable[None]] | None:
    """Start a dispatcher per configured receiver and subscribe them to published records.
    Returns the function that stops them (or ``None`` when there are none)."""
    specs = app.state.settings.webhooks
    app.state.webhooks = []
    if not specs:
        return None
    client = httpx.AsyncClient(timeout=10.0)
    dispatchers = [WebhookDispatcher(spec, client) for spec in specs]
    for dispatcher in dispatchers:
        dispatcher.start()
        app.state.hooks.event_subscribers.append(dispatcher.offer)
    app.state.webhooks = dispatchers

    async def stop() -> None:
        for dispatcher in dispatchers:
            await dispatcher.stop()
        await client.aclose()

    return stop
