"""Live event streams: the Sans-I/O core every live subscriber (socket, SSE, webhook) drives."""

from __future__ import annotations

from taskwire_client.close_codes import CloseCode
from .event_stream import EventStream
from .schema import EventSchema
from .view import SubagentNode, SubagentsParam

__all__ = ["CloseCode", "EventSchema", "EventStream", "SubagentNode", "SubagentsParam"]
