"""The driver's protocol channel (``driver.py``): fd 1 as the driver was started, kept apart
from what OpenHands prints, and a bounded outbox drained by a writer thread. Stdlib only; it runs
in the OpenHands venv beside ``driver.py``."""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from typing import IO, Any

PROTOCOL = 2
QUEUE_SIZE = 10_000


def open_channel() -> IO[str]:
    """Take fd 1 for the protocol and point fd 1 at stderr, so that nothing OpenHands prints can
    corrupt it. Ctrl-C reaches the whole process group: the server stops the driver (shutdown,
    or stdin closing when it is gone), so it neither dies half-way through a report nor prints a
    traceback. Call before importing OpenHands."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return channel


class Outbox:
    """A bounded queue drained by a writer thread: an agent thread (holding OpenHands' state
    lock) never waits on taskwire reading. When full, reports are dropped and counted."""

    def __init__(self, channel: IO[str]) -> None:
        self._channel = channel
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._seq = 0
        self._seq_lock = threading.Lock()
        self.dropped = 0
        self._writer = threading.Thread(target=self._write, name="taskwire-writer", daemon=True)
        self._writer.start()

    def put(self, message: dict[str, Any], *, must: bool = False) -> None:
        with self._seq_lock:
            self._seq += 1
            message = {"v": PROTOCOL, "seq": self._seq, **message}
            if self.dropped and message["type"] != "dropped":
                self._put({"v": PROTOCOL, "seq": self._seq, "type": "dropped", "count": self.dropped}, True)
                self._seq += 1
                message["seq"] = self._seq
        self._put(message, must)

    def _put(self, message: dict[str, Any], must: bool) -> None:
        try:
            if must:
                self._queue.put(message, timeout=30)
            else:
                self._queue.put_nowait(message)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        self._queue.put(None)
        self._writer.join(timeout=10)

    def _write(self) -> None:
        while (message := self._queue.get()) is not None:
            try:
                self._channel.write(json.dumps(message, default=str) + "\n")
            except (OSError, ValueError):  # taskwire went away: nothing left to tell
                os._exit(0)
