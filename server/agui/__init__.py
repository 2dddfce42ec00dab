"""AG-UI 1.0: a projection of taskwire's stored records, written Sans-I/O.

``AguiProjection`` turns the records an ``EventStream`` sends into AG-UI events, ``sse``
frames them, ``input`` reads a ``RunAgentInput``. The HTTP routes that drive them are
``server/api/agui.py``; nothing here stores or runs anything.
"""

from __future__ import annotations

from .input import RunAgentInput
from .projection import AguiProjection, Frame
from .sse import KEEPALIVE, MEDIA_TYPE, encode_frames, parse_last_event_id
from .subagents import SubagentInfo

__all__ = [
    "AguiProjection",
    "Frame",
    "KEEPALIVE",
    "MEDIA_TYPE",
    "RunAgentInput",
    "SubagentInfo",
    "encode_frames",
    "parse_last_event_id",
]
