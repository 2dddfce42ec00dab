"""The text a person reads in an event: what ``body=`` searches.

One definition for every store: ``body_text(event)`` is the readable text of an event (a
message's content; a tool call's name, argument values and thought; an observation's output;
an error's message; an ACP call's title, content and input values; a sub-agent's description
and result; a permission request's tool, title, argument values and reason, and its answer's
reason), its parts one per line, folded by ``fold``. Never field names, never JSON escapes:
values are taken from the event itself, not from its JSON. State updates
(``ConversationStateUpdateEvent``) hold machine state, not text, and have none.

A search term matches an event when ``fold(term) in body_text(event)``. The stores keep
``body_text`` beside each event, computed once at append, and index it.

Sans-I/O: no store, no runtime, only the event models.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from taskwire_client.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    Event,
    MessageEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    parse_event,
)

MIN_INDEXED = 3
"""Terms of at least this many characters are served by the stores' trigram indexes; shorter
ones are looked for by reading the folded text of the events in range."""

# Characters no database column holds: NUL (PostgreSQL's text refuses it) and lone surrogates
# (not encodable as UTF-8). Both become U+FFFD, on the event's side and the term's alike.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

# Keys of ACP content blocks that say what a block is or point elsewhere: not read by anyone.
_NOT_TEXT_KEYS = frozenset({"type", "terminalId", "toolCallId", "_meta", "mimeType", "uri"})


def fold(text: str) -> str:
    """``text`` as it is compared: Unicode case folding (``str.casefold``), NUL and lone
    surrogates replaced by U+FFFD."""
    folded = text.casefold()
    if _UNSTORABLE.search(folded) is not None:
        folded = _UNSTORABLE.sub("\ufffd", folded)
    return folded


def body_text(event: Event) -> str:
    """The folded readable text of ``event`` (``""`` when it has none)."""
    return fold("\n".join(part for part in readable_parts(event) if part))


def readable_parts(event: Event) -> Iterator[str]:
    """The pieces of readable text of ``event``, unfolded, in the order a viewer shows them."""
    if isinstance(event, (MessageEvent, StreamingDeltaEvent)):
        yield event.content
    elif isinstance(event, ActionEvent):
        yield event.tool_name
        if event.thought:
            yield event.thought
        yield from _values(event.arguments)
    elif isinstance(event, ObservationEvent):
        yield event.content
    elif isinstance(event, AgentErrorEvent):
        yield event.error
    elif isinstance(event, ACPToolCallEvent):
        if event.title:
            yield event.title
        yield from _values(event.content, skip=_NOT_TEXT_KEYS)
        yield from _values(event.raw_input)
    elif isinstance(event, SubagentStartedEvent):
        yield event.description
    elif isinstance(event, SubagentFinishedEvent):
        yield event.result
    elif isinstance(event, PermissionRequestEvent):
        yield event.tool_name
        yield event.title
        yield from _values(event.arguments)
        if event.reason:
            yield event.reason
    elif isinstance(event, PermissionResolvedEvent):
        if event.reason:
            yield event.reason


def readable_json_values(data: Any) -> str:
    """The folded text of a stored event that no longer parses as any kind (a record written
    by another version): its values, not its keys, without the routing and id fields."""
    if not isinstance(data, dict):
        return ""
    kept = {key: value for key, value in data.items() if key not in _ROUTING and not key.endswith("id")}
    return fold("\n".join(part for part in _values(kept) if part))


_ROUTING = frozenset({"kind", "timestamp", "source", "seq", "status", "role", "key", "value", "is_error", "code"})


def _values(data: Any, *, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """The scalar values inside ``data`` (a JSON-like value), depth first, as text: strings as
    they are, other scalars in their JSON spelling; keys are never yielded."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            if key not in skip:
                yield from _values(value, skip=skip)
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from _values(value, skip=skip)
    elif data is not None:
        yield json.dumps(data)


def stored_body_text(json_text: str) -> str:
    """``body_text`` of an event as stored (its wire JSON): for filling in the text of events
    stored before it was kept. A record no kind parses any more falls back on its values."""
    try:
        return body_text(parse_event(json_text))
    except ValueError:  # pydantic's ValidationError is one
        try:
            data = json.loads(json_text)
        except ValueError:
            return ""
        return readable_json_values(data)
