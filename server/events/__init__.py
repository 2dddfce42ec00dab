"""The wire format: every event taskwire stores, publishes or sends."""

from server.events.models import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    Event,
    LLMCall,
    MessageEvent,
    ObservationEvent,
    PermissionOption,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    Usage,
    EVENT_KINDS,
    parse_event,
)
from server.events.record import EventRecord

__all__ = [
    "ACPToolCallEvent",
    "ActionEvent",
    "AgentErrorEvent",
    "ConversationStateUpdateEvent",
    "Event",
    "EventRecord",
    "EVENT_KINDS",
    "LLMCall",
    "MessageEvent",
    "ObservationEvent",
    "PermissionOption",
    "PermissionRequestEvent",
    "PermissionResolvedEvent",
    "StreamingDeltaEvent",
    "SubagentFinishedEvent",
    "SubagentStartedEvent",
    "Usage",
    "parse_event",
]
