"""A client of taskwire's public API, for people who build on it.

- ``Client``: the REST calls (create, send, search with paging, cancel a sub-agent, ...) and
  ``client.events(id)``, which opens a ``LiveEvents`` stream.
- ``LiveEvents``: typed events of one conversation, live; it survives disconnects and server
  restarts (it resumes by ``seq``): every stored event once, in order.
- ``Tree``: the events nested as they arrive, sub-agents under the tool calls that spawned them.

It speaks HTTP and WebSocket only, and reads the wire format from ``server.events``; it never
imports the server's runtime. See docs/client.md.
"""

from server.client.errors import APIError, ClientError, ProtocolError, StreamRefused, Unreachable
from server.client.frames import RUN_ENDS, UnknownEvent, parse_frame, root_status, run_ended_text
from server.client.live import LiveEvents
from server.client.rest import Client, EventPage
from server.client.tree import Message, Subagent, ToolCall, Tree, call_title, describe

__all__ = [
    "APIError",
    "Client",
    "ClientError",
    "EventPage",
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
]
