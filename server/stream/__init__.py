"""Live event streams: the Sans-I/O core every live subscriber (socket, SSE, webhook) drives."""

from __future__ import annotations

from server.stream.close_codes import CloseCode
from server.stream.event_stream import EventStream
from server.stream.schema import EventSchema
from server.stream.view import SubagentNode, SubagentsParam

__all__ = ["CloseCode", "EventSchema", "EventStream", "SubagentNode", "SubagentsParam"]
