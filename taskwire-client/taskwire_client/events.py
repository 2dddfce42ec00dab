"""Event models: the wire format of DESIGN.md.

Every event is a pydantic model serialized with ``exclude_none=True``; ``kind`` is the class
name. Event kinds, their field names and meanings never change once shipped
(``tests/test_contract.py`` pins them).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from taskwire_client.ids import new_event_id


Source = Literal["agent", "user", "environment"]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
SubagentStatus = Literal["running", "completed", "error", "cancelled"]
ConversationStatus = Literal["idle", "running", "paused", "finished", "error"]
PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
PermissionOutcome = Literal["allowed", "rejected", "cancelled", "timed_out"]


from taskwire_client.timestamps import Timestamp, _utc_z, utc_now  # noqa: F401  (re-exported)
from taskwire_client.usage import COST_DIGITS, LLMCall, Usage, add_costs  # noqa: F401  (re-exported)


class Event(BaseModel):
    """Base of every event; ``kind`` is filled with the class name."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="ignore")

    ephemeral: ClassVar[bool] = False
    """Ephemeral kinds are published live but never stored and carry no ``seq``."""

    id: str = Field(default_factory=new_event_id)
    """A UUIDv7 string: time-ordered, so the store's index on ids appends (``taskwire_client.ids``)."""
    kind: str = ""
    """The discriminator: the class name, e.g. ``ActionEvent``."""
    timestamp: Timestamp = Field(default_factory=utc_now)
    """When the event was made, UTC."""
    source: Source = "agent"
    """Who produced it: ``agent``, ``user`` or ``environment``."""
    seq: int | None = None
    """Position in the conversation tree's log, assigned on append; absent on ephemeral events."""
    parent_tool_use_id: str | None = None
    """Sub-agent events only: the ``tool_call_id`` of the call that spawned that sub-agent."""
    subagent_id: str | None = None
    """Sub-agent events only: the id of the sub-agent (its child conversation)."""

    def model_post_init(self, __context: Any) -> None:
        if not self.kind:
            self.kind = type(self).__name__

    def to_json(self) -> str:
        """The wire form: JSON without ``None`` fields."""
        return self.model_dump_json(exclude_none=True)


class MessageEvent(Event):
    """A message of the conversation: the user's, the agent's answer, or a system note."""

    kind: Literal["MessageEvent"] = "MessageEvent"
    role: Literal["user", "assistant", "system"] = "assistant"
    """Who speaks."""
    content: str = ""
    """The text."""


class ActionEvent(Event):
    """The agent calls a tool."""

    kind: Literal["ActionEvent"] = "ActionEvent"
    tool_name: str
    """The tool's name as the model called it."""
    tool_call_id: str
    """The id the LLM gave the call; observations and sub-agents point back to it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments, a JSON object."""
    thought: str | None = None
    """Text the model wrote in the same response before its tool calls."""
    llm_response_id: str | None = None
    """Groups the calls of one LLM response, to rebuild the model's history."""


class ObservationEvent(Event):
    """The result of a tool call."""

    kind: Literal["ObservationEvent"] = "ObservationEvent"
    source: Source = "environment"
    tool_name: str
    """The tool that ran."""
    tool_call_id: str
    """The call this answers."""
    content: str = ""
    """The result as text, as the model sees it."""
    is_error: bool = False
    """True when the tool failed; the model sees the error text."""
    status: ToolCallStatus | None = None
    """``completed``, ``failed``, or ``cancelled`` for a call dropped before it ran."""


class AgentErrorEvent(Event):
    """The agent could not go on: an LLM, bridge or start-up failure."""

    kind: Literal["AgentErrorEvent"] = "AgentErrorEvent"
    source: Source = "environment"
    error: str
    """What went wrong, readable."""
    code: str | None = None
    """A stable machine-readable reason, e.g. ``llm_error``, ``incomplete_tool_call``."""
    tool_call_id: str | None = None
    """The tool call the error belongs to, if any."""


class LLMRetryEvent(Event):
    """A model call failed in a way worth another try, and is tried again after ``delay``
    (a reset connection, a timeout, a stalled stream, ``429``, ``5xx``, ``529``). Stored in the
    stream of the agent whose call it is, stamped like its other events."""

    kind: Literal["LLMRetryEvent"] = "LLMRetryEvent"
    source: Source = "environment"
    attempt: int
    """The attempt about to be made (2 for the first retry)."""
    max_attempts: int
    """The most attempts the call makes."""
    delay: float
    """Seconds waited before it (the provider's ``Retry-After`` when it gave one)."""
    reason: str
    """Short and stable: the HTTP status (``429``, ``503``, ``529``), ``connection``,
    ``timeout``, ``stalled``, ``broken_stream``, or a stream error type (``overloaded_error``)."""
    error: str
    """The failure, readable: the provider's own message when it sent one."""
    status_code: int | None = None
    """The HTTP status, when the provider answered one."""
    discard_text: bool | None = None
    """``true``: the failed attempt had streamed text (``StreamingDeltaEvent``s since the
    agent's last stored message); drop it, the next attempt streams the answer anew."""


class StreamingDeltaEvent(Event):
    """A fragment of text as the model streams it. Ephemeral: never stored."""

    ephemeral: ClassVar[bool] = True
    kind: Literal["StreamingDeltaEvent"] = "StreamingDeltaEvent"
    content: str = ""
    """The fragment."""
    channel: Literal["text", "thought"] = "text"
    """Answer text or reasoning."""


class ConversationStateUpdateEvent(Event):
    """A change of conversation state (``key=status``; ``key=usage`` with the conversation's
    usage so far, after each model call, and under ``added`` what that call added: its tokens
    and, for a request taskwire made itself, its ``LLMCall`` fields; ``key=pending_permissions``,
    on the root, with the tree's waiting permission requests each time that set changes), or
    the ``full_state`` first frame."""

    kind: Literal["ConversationStateUpdateEvent"] = "ConversationStateUpdateEvent"
    source: Source = "environment"
    key: str
    """``status``, ``usage``, ``full_state`` ..."""
    value: Any = None
    """The new value."""
    reason: str | None = None
    """``key=status`` only: why, when neither the run nor a person chose it (see
    ``ConversationInfo.status_reason``)."""


class SubagentStartedEvent(Event):
    """A sub-agent started; first event of its own stream."""

    kind: Literal["SubagentStartedEvent"] = "SubagentStartedEvent"
    source: Source = "environment"
    subagent_type: str = "general-purpose"
    """The sub-agent type's name."""
    description: str = ""
    """The short description the spawning call gave."""
    cwd: str | None = None
    """The folder it works in, when its agent says it is not its parent's (a Claude Code
    sub-agent in its own worktree); omitted otherwise."""
    parent_subagent_id: str | None = None
    """The sub-agent that spawned this one; omitted for a sub-agent of the root."""
    label: str | None = None
    """Its per-tree name as the models see it (``task-1``, ``task-1.2``, in call order)."""


class SubagentFinishedEvent(Event):
    """A sub-agent ended; last event of its own stream."""

    kind: Literal["SubagentFinishedEvent"] = "SubagentFinishedEvent"
    source: Source = "environment"
    status: Literal["completed", "error", "cancelled"] = "completed"
    """How it ended."""
    result: str = ""
    """Its final answer (or the error)."""
    usage: Usage | None = None
    """Tokens this sub-agent used (its own sub-agents not included)."""
    stop_reason: str | None = None
    """Why it stopped before its work was done, when a limit stopped it: the budget's name
    (``max_cost_usd``, ``max_tokens``, ``max_iterations``, ``max_seconds``)."""
    budget: dict[str, Any] | None = None
    """With ``stop_reason``: ``{"limit", "max", "used", "set_on"}``: the budget crossed, its
    figure, what was used, and the agent whose budget it is (this sub-agent, or an ancestor)."""


class ACPToolCallEvent(Event):
    """A tool call reported by an external agent (ACP, Claude SDK). Last event per ``tool_call_id`` wins."""

    kind: Literal["ACPToolCallEvent"] = "ACPToolCallEvent"
    tool_call_id: str
    """The peer's id for the call."""
    title: str | None = None
    """Human-readable title, e.g. ``echo hi`` or ``Task``."""
    status: ToolCallStatus | None = None
    """Tool-call status."""
    tool_kind: str | None = None
    """The peer's category: ``execute``, ``read``, ``edit``, ``think``, ``other`` ..."""
    raw_input: Any = None
    """The call's input as the peer sent it."""
    raw_output: Any = None
    """The call's output as the peer sent it."""
    content: list[Any] | None = None
    """Content blocks the peer attached (text, diffs, terminals)."""
    is_error: bool | None = None
    """True when the call failed."""


class PermissionOption(BaseModel):
    """One answer a permission request offers (a bridged peer's options as it offered them)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="ignore")

    option_id: str
    """The id to answer with (a peer's own, e.g. ``allow-once``; taskwire's: the kind)."""
    kind: PermissionOptionKind
    """``allow_once``, ``allow_always``, ``reject_once`` or ``reject_always``."""
    name: str = ""
    """What a person reads on the button."""


class PermissionRequestEvent(Event):
    """A tool call waits for a person's answer. Stored in the stream of the agent that asks,
    stamped like its other events; ``PermissionResolvedEvent`` with the same ``request_id``
    ends it."""

    kind: Literal["PermissionRequestEvent"] = "PermissionRequestEvent"
    request_id: str
    """A UUIDv7 string naming this request in the routes and frames that answer it."""
    tool_call_id: str
    """The call that waits (its ``ActionEvent`` or ``ACPToolCallEvent``)."""
    tool_name: str
    """The tool the call would run."""
    title: str = ""
    """What the call would do, in a few words (a command, a path)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments, a JSON object."""
    options: list[PermissionOption] = Field(default_factory=list)
    """The answers offered."""
    reason: str | None = None
    """Why it asks, when known (the policy, or the peer's own reason)."""


class PermissionResolvedEvent(Event):
    """A permission request got its answer, or ended without one (``cancelled``, ``timed_out``)."""

    kind: Literal["PermissionResolvedEvent"] = "PermissionResolvedEvent"
    source: Source = "environment"
    request_id: str
    """The request this ends."""
    tool_call_id: str
    """The call that waited."""
    outcome: PermissionOutcome
    """``allowed``, ``rejected``, ``cancelled`` (its run stopped) or ``timed_out`` (treated as
    rejected)."""
    option_id: str | None = None
    """The option chosen, when someone chose one."""
    reason: str | None = None
    """The person's reason, or why it ended without an answer."""
    answered_by: str | None = None
    """Which surface answered: ``rest``, ``socket``, ``acp``, ``policy`` (an earlier
    ``allow_always``), ``timeout``, ``server`` (a stop, a cancel, a restart); never a key."""


_KINDS = (
    MessageEvent,
    ActionEvent,
    ObservationEvent,
    AgentErrorEvent,
    StreamingDeltaEvent,
    ConversationStateUpdateEvent,
    SubagentStartedEvent,
    SubagentFinishedEvent,
    ACPToolCallEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    LLMRetryEvent,
)

AnyEvent = Annotated[Union[_KINDS], Field(discriminator="kind")]  # type: ignore[valid-type]

EVENT_KINDS: dict[str, type[Event]] = {cls.__name__: cls for cls in _KINDS}
"""Every event kind by its bare name."""

_adapter: TypeAdapter[Any] = TypeAdapter(AnyEvent)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Parse an event from its wire JSON (or a dict); raises ``pydantic.ValidationError``."""
    if isinstance(data, dict):
        return _adapter.validate_python(data)
    return _adapter.validate_json(data)
