"""What an agent backend is, and what the runtime lends it (``AgentHost``).

A backend (native LLM loop, ACP bridge, Claude SDK) drives one conversation. It never touches
the store or the bus: it emits events through its host, and maps its peer's sub-agents onto
taskwire sub-agents with ``host.start_subagent`` so that stamping, storage and forwarding are
the same for every backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence

from ...events import Event, LLMCall, PermissionOption, Usage
from ...permissions.policy import Approval
from ...settings import Settings

if TYPE_CHECKING:
    from ..permissions import PermissionResolution


class AgentHost(Protocol):
    """One conversation (a root or a sub-agent) as a backend sees it."""

    conversation_id: str
    root_id: str
    workspace: Path
    settings: Settings

    @property
    def is_subagent(self) -> bool: ...

    stop_hook: Callable[[], Awaitable[None]] | None
    """A sub-agent a peer agent runs: how to ask the peer to stop it (``None``: it cannot)."""

    steer_hook: Callable[[str], Awaitable[None]] | None
    """How to hand a person's message to this agent mid-run, when its backend (not the inbox)
    carries it: set on a task's sub-agent by a backend that can (``claude_sdk``), or on a peer's
    own sub-agent by a backend whose peer allows it (see ``runtime/capabilities.py``)."""

    async def emit(self, event: Event, *, wait: bool = True) -> None:
        """Record ``event`` in this conversation's stream (stamped when this is a sub-agent) and
        publish it where it belongs, once stored. Ephemeral events are only published.
        ``wait=False`` returns once it is queued (see ``ConversationHost.emit``)."""
        ...

    def take_user_messages(self) -> list[str]:
        """User messages sent since the last call (already stored as MessageEvents)."""
        ...

    @property
    def has_pending_messages(self) -> bool:
        """True when user messages arrived that ``take_user_messages`` has not handed out yet."""
        ...

    @property
    def pause_requested(self) -> bool:
        """Set by ``POST /pause``: stop at the next safe point and return."""
        ...

    async def wait_for_pause(self) -> None:
        """Return once a pause is requested (a model call's back-off waits for it too)."""
        ...

    async def start_subagent(
        self,
        parent_tool_use_id: str,
        *,
        subagent_type: str,
        description: str,
        agent: dict[str, Any] | None = None,
        cwd: str | None = None,
    ) -> AgentHost:
        """A child conversation for a sub-agent spawned by ``parent_tool_use_id`` (a tool call of
        this conversation). Emits its ``SubagentStartedEvent``. Its events are stamped with
        ``parent_tool_use_id`` and its id, stored in its own stream, and forwarded to the root's
        socket when ``OH_FORWARD_SUBAGENT_EVENTS`` is on. ``cwd``: the folder a peer's
        sub-agent works in, when the peer says it differs from this conversation's."""
        ...

    async def finish_subagent(
        self, child: AgentHost, *, status: str, result: str, usage: Usage | None = None
    ) -> None:
        """Emit the child's ``SubagentFinishedEvent`` and record its outcome."""
        ...

    async def stored_state(self, key: str) -> Any:
        """The value of the last ``ConversationStateUpdateEvent`` ``key`` stored in this
        conversation's own stream (``None``: none): what a backend recorded for itself, read
        back after a restart (the ``acp`` backend's peer session id)."""
        ...

    async def add_usage(self, usage: Usage, call: LLMCall | None = None) -> None:
        """Add an LLM call's tokens to this conversation's stats; ``call`` describes the
        request when the backend made it itself (a trace's ``chat`` span comes from it)."""
        ...

    approval: Approval
    """This agent's approval policy: its spec's ``approval`` (a root without one:
    ``OH_APPROVAL``) joined with every ancestor's. ``approval.asks(tool_name)`` says whether
    taskwire's policy wants a person to answer before that tool runs. A bridged peer asks on
    its own terms (``permissions: "ask"``, Claude Code's ``permission_mode``); its backend then
    calls ``request_permission`` whatever this says."""

    async def request_permission(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        title: str = "",
        arguments: dict[str, Any] | None = None,
        options: Sequence[PermissionOption] | None = None,
        reason: str | None = None,
    ) -> PermissionResolution:
        """Ask a person whether tool call ``tool_call_id`` of *this* agent may run, and wait
        for the answer. Call it on the host of the agent that asks: a peer's sub-agent's
        request goes to the sub-agent host its ``parentToolUseId`` / ``agent_id`` names (the
        host ``start_subagent`` returned), the main agent's to the root's host.

        What happens: a ``PermissionRequestEvent`` (``request_id`` a fresh UUIDv7; ``title``
        defaults to ``tool_name``; ``options`` default to taskwire's ``allow_once``,
        ``allow_always``, ``reject_once``) is stored in this agent's stream, stamped like its
        other events and forwarded like them; the root's stream gets ``key=pending_permissions``.
        Pass a peer's options *as it offered them* (``option_id`` = the peer's own id, ``kind``
        mapped onto ``allow_once|allow_always|reject_once|reject_always``): the resolution's
        ``option_id`` is one of them, to hand back to the peer unchanged. Returns once the
        ``PermissionResolvedEvent`` is stored, with a ``PermissionResolution``:

        - ``outcome``: ``allowed`` / ``rejected`` (a person answered, through REST, a socket
          frame or a projection; or ``answered_by="policy"``: an earlier ``*_always`` answer
          for this ``tool_name`` in this tree), ``timed_out`` (``OH_APPROVAL_TIMEOUT_S``;
          treat it as rejected: ``option_id`` is ``None``, pick the peer's reject option);
        - ``option_id``, ``reason`` (the person's, or why it ended), ``answered_by``, ``event``;
        - ``allowed``: ``outcome == "allowed"``.

        Cancellation (interrupt, sub-agent cancel, delete, shutdown) resolves it ``cancelled``
        and records that before the ``CancelledError`` propagates; the caller then closes its
        call by the closing rule (``server/events/closing.py``: it never ran, so
        ``cancelled``). Several requests may wait at once, from any agents of the tree; each
        call waits only for its own. After a crash, recovery resolves stored requests nobody
        waits for ``cancelled``. See docs/permissions.md."""
        ...


class AgentBackend(Protocol):
    """Drives one conversation's agent."""

    holds_session: bool
    """Whether it holds, between runs, something the store does not (a peer's process and its
    session): then it is kept until its root is unloaded (``OH_IDLE_UNLOAD_SECONDS``), so a
    follow-up finds its peer. One that holds nothing of the kind (the native agent, whose
    history is its stream) is released as soon as its run ends and built again from the
    stream by the next run, so a finished tree keeps no history in memory."""

    async def run(self, host: AgentHost) -> str | None:
        """Work on the user messages so far until the agent is done (or a pause is requested).
        Returns the final answer, if any. Raises ``BackendError`` on failure; cancellation
        (interrupt) is a ``CancelledError`` after closing in-flight tool calls."""
        ...

    async def close(self) -> None:
        """Release what the backend holds (subprocesses, sessions). Idempotent."""
        ...


async def run_user_turns(host: AgentHost, run_turn: Callable[[str], Awaitable[str | None]]) -> str | None:
    """A bridged backend's run: each user message waiting on ``host`` is one turn of its peer,
    until none is left (the last turn's answer) or a pause is asked (``None``)."""
    answer: str | None = None
    while not host.pause_requested:
        prompts = host.take_user_messages()
        if not prompts:
            return answer
        for text in prompts:
            answer = await run_turn(text)
    return None
