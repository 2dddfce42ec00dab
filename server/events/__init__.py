"""The wire format: every event taskwire stores, publishes or sends.

The models are defined once, in the client distribution (``taskwire_client.events``), so a client
and the server parse events with the same code; this package adds what only the server needs
(``EventRecord``, the body text search reads, the closing rule)."""

from taskwire_client.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    Event,
    LLMCall,
    LLMRetryEvent,
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
from .record import EventRecord

__all__ = [
    "ACPToolCallEvent",
    "ActionEvent",
    "AgentErrorEvent",
    "ConversationStateUpdateEvent",
    "Event",
    "EventRecord",
    "EVENT_KINDS",
    "LLMCall",
    "LLMRetryEvent",
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
