"""The tracing worker: a process of its own that turns records into spans and exports them.

Encoding spans for OTLP is pure-Python work under the interpreter lock (about a tenth of a
millisecond a span); in the server's process it would slow the agents it traces. So the
server only queues records and ships them here in batches (``RecordTracer``); this process
runs the ``SpanBuilder`` and the SDK's exporter. One worker per server, fed in order.

Run as ``python -m taskwire.telemetry.trace_worker``; it speaks frames on stdin and stdout (a
4-byte big-endian length, then a pickle): first the config ``(capture_content, replica_id,
environ, log_format, log_level)``, then ``("trace", rows)`` or ``("finish", end_ns)``, each
answered by its ``Stats``. It ends after ``finish``, or when its stdin closes (the server is gone).
It runs in a process group of its own and ignores SIGINT and SIGTERM (``server/child_processes.py``):
a stop signalled to the server's group or cgroup reaches the server, whose shutdown sends ``finish``.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any, BinaryIO, Mapping, Sequence

from ..child_processes import ignore_stop_signals
from ..events import EventRecord
from .otlp import SpanExport
from .span_builder import SpanBuilder

RecordRow = tuple[str, str, "int | None", str, str, str, str, "str | None", "str | None", str]
"""An ``EventRecord``'s fields in order: a tuple pickles fifty times faster than the record."""

Stats = tuple[int, int, int, int]
"""What the worker did so far: spans exported, spans the exporter refused, spans the builder
dropped (too many open), spans open now."""

_LENGTH = struct.Struct(">I")


def row_of(record: EventRecord) -> RecordRow:
    return (
        record.root_id, record.conversation_id, record.seq, record.id, record.kind, record.source,
        record.timestamp, record.subagent_id, record.parent_tool_use_id, record.json,
    )


def decode(body: bytes) -> Any:
    """The message of a frame's body (this worker's or the server's: both trusted)."""
    return pickle.loads(body)


def frame(message: Any) -> bytes:
    """``message`` as one frame of the worker's protocol."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


class TraceWorker:
    """The worker's state: a span builder and an exporter (used in this process only)."""

    def __init__(self, capture_content: bool, replica_id: str, environ: Mapping[str, str]) -> None:
        os.environ.update(environ)  # the server's OTEL_* variables, as they were when it started
        self.builder = SpanBuilder(capture_content=capture_content)
        self.export = SpanExport(replica_id)

    def trace(self, rows: Sequence[RecordRow]) -> Stats:
        """Build spans from ``rows`` (in ``seq`` order per tree) and export those that ended."""
        builder = self.builder
        for row in rows:
            builder.receive(EventRecord(*row))
        self.export.export(builder.spans_to_export())
        return self.stats()

    def finish(self, end_ns: int) -> Stats:
        """End every open span at ``end_ns``, export them, shut the exporter down."""
        self.builder.close_all(end_ns)
        self.export.export(self.builder.spans_to_export())
        self.export.shutdown()
        return self.stats()

    def stats(self) -> Stats:
        return (self.export.exported, self.export.failed, self.builder.dropped, self.builder.open_spans)


def _read(stream: BinaryIO) -> Any:
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None  # the server closed our stdin: it is gone
    (size,) = _LENGTH.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        return None  # the server died mid-frame
    return decode(body)


def main() -> int:
    from .logs import configure_logging

    ignore_stop_signals()
    stdin = sys.stdin.buffer
    # The protocol owns the original stdout; anything printed goes to stderr instead.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    config = _read(stdin)
    if config is None:
        return 0
    capture_content, replica_id, environ, log_format, log_level = config
    configure_logging(log_format, log_level)
    worker = TraceWorker(capture_content, replica_id, environ)
    while (message := _read(stdin)) is not None:
        op, payload = message
        stats = worker.trace(payload) if op == "trace" else worker.finish(payload)
        stdout.write(frame(stats))
        stdout.flush()
        if op == "finish":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
