"""A client of taskwire's public API, for people who build on it.

- ``Client``: the REST calls (create, send, search with paging, cancel a sub-agent, ...) and
  ``client.events(id)``, which opens a ``LiveEvents`` stream.
- ``LiveEvents``: typed events of one conversation, live; it survives disconnects and server
  restarts (it resumes by ``seq``): every stored event once, in order.
- ``Tree``: the events nested as they arrive, sub-agents under the tool calls that spawned them.

It speaks HTTP and WebSocket only and owns the wire format (``taskwire_client.events``, which
the server uses too); it depends on httpx, websockets and pydantic, nothing of the server's.
Which servers it speaks to: ``taskwire_client.version``. See docs/client.md.
"""

from taskwire_client.errors import APIError, ClientError, IncompatibleServer, ProtocolError, StreamRefused, Unreachable
from taskwire_client.frames import RUN_ENDS, UnknownEvent, parse_frame, root_status, run_ended_text
from taskwire_client.live import LiveEvents
from taskwire_client.rest import Client, EventPage
from taskwire_client.tree import Message, Subagent, ToolCall, Tree, call_title, describe
from taskwire_client.version import __version__

__all__ = [
    "APIError",
    "Client",
    "ClientError",
    "EventPage",
    "IncompatibleServer",
    "LiveEvents",
    "Message",
    "ProtocolError",
    "RUN_ENDS",
    "StreamRefused",
    "Subagent",
    "ToolCall",
    "Tree",
    "UnknownEvent",
    "Unreachable",
    "call_title",
    "describe",
    "parse_frame",
    "root_status",
    "run_ended_text",
    "__version__",
]
