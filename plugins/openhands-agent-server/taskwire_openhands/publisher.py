"""Publish a sub-agent's stamped events to every subscriber of its root conversation.

Called on OpenHands' thread (the sub-agent's, holding its state lock), so it only records the
sub-agent's stamp once (``records.py``) and hands the frame to the server's event loop, the way
the server hands over its own events: it never waits for a subscriber. The frame goes to the
conversation's ``PubSub`` (the socket, webhooks, the session socket...), never to its log.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from openhands.sdk.event import Event

from .frames import SubagentEventFrame
from .records import record_run
from .stamping import Stamp


class Publisher:
    """The ``on_event`` of one root conversation's stamper on the agent-server."""

    def __init__(self, event_service: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.event_service = event_service
        self.loop = loop
        self._recorded: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __call__(self, stamp: Stamp | None, event: Event) -> None:
        if stamp is None:  # the root's own: the server publishes those itself
            return
        run = (stamp.subagent_id, stamp.parent_tool_use_id)
        with self._lock:
            first = run not in self._recorded
            self._recorded.add(run)
        if first:
            record_run(stamp, event.id)
        # EventService._pub_sub (contract.py): published, never appended to the log.
        publish = self.event_service._pub_sub(SubagentEventFrame.of(stamp, event))
        try:
            asyncio.run_coroutine_threadsafe(publish, self.loop)
        except RuntimeError:  # the server's loop is closed: it is shutting down
            publish.close()
