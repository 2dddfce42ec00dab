"""Sans-I/O: a tree's sub-agents as ACP child sessions (the subagents RFD, v1), agent side.

An editor whose ``initialize`` declares ``clientCapabilities.subagents`` (an object) sees each
sub-agent of the tree as a child session whose id is the sub-agent's conversation id.
``ChildSessionProjection`` sits after ``ACPProjection``: it reads the same events and reroutes what the
projection made for them.

- A ``SubagentStartedEvent`` announces the child with a ``subagent_update`` on its immediate
  parent's session (the root's, or the parent sub-agent's): ``title`` (the spawning call's
  description, else the sub-agent's label or type), ``description`` (the type, when it differs),
  ``state: running``, and ``capabilities.cancel`` only for a sub-agent taskwire's runtime runs
  (spawned by a native ``task`` call): a peer's own sub-agent (Claude Code's, under ``acp`` or
  ``claude_sdk``) cannot be stopped alone from here. Replayed announcements carry no capability.
  ``cwd`` when the start names a folder other than the parent's.
- The delegation prompt is the linked ``session_message`` pair (``messageId`` = the spawning
  call's id, outgoing on the parent, incoming on the child); the answer is ``<id>:reply`` from
  the child on the parent's session, as claude-agent-acp sends them.
- Every update and permission request stamped with an announced sub-agent's id goes on that
  child's session. One naming a sub-agent never announced (forwarding off, a child frame before
  its start) stays on the root, as the flattened form sends it: never lost, never misfiled.
- Work state: ``requires_action`` while one of the child's permission requests waits,
  ``running`` again after, ``idle`` with ``end_turn`` / ``cancelled`` / ``error`` (+ the error)
  at its ``SubagentFinishedEvent``; a stored ``work_state`` state event of the sub-agent (a
  peer's report) is sent as it says.
- The spawning call (``_meta.claudeCode.toolName: "Agent"``) is hidden from the parent once its
  child is announced, as the adapter hides its launches: its updates are held until the child
  starts (then dropped) or the call ends without one (then sent, so a failed launch still shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .call_view import AGENT_TOOL_NAME
from .toolcalls import TERMINAL
from .updates import Ask, Output, RunEnded, Settled, Update

END_REASONS = {"completed": "end_turn", "cancelled": "cancelled", "error": "error"}
"""A ``SubagentFinishedEvent`` status as the idle state's ``stopReason``."""
SUBAGENT_ERROR = -32603


@dataclass(slots=True)
class Child:
    """One announced child session."""

    id: str
    parent_session: str | None
    """``None``: the root's session."""
    launch: str | None
    """The spawning call's id (the prompt pair's ``messageId``)."""
    cancellable: bool
    cwd: str | None = None
    """Its folder (the parent's unless its start said otherwise)."""
    state: dict[str, Any] = field(default_factory=lambda: {"state": "running"})
    asking: set[str] = field(default_factory=set)
    """Its permission requests waiting for an answer."""
    prompted: bool = False
    finished: bool = False


class ChildSessionProjection:
    """One ACP session's children; feed ``route`` each event with what the projection made of it."""

    def __init__(self, root_id: str, *, workspace: str | None = None, hold_launches: bool = True) -> None:
        """``workspace``: the root's folder. ``hold_launches``: hide spawning calls behind their
        child (only when the feed holds sub-agent events; without them no child is announced)."""
        self.root_id = root_id
        self.workspace = workspace
        self.hold_launches = hold_launches
        self.children: dict[str, Child] = {}
        self._prompts: dict[str, str] = {}
        """Spawning call id -> the prompt it gave."""
        self._native_launches: set[str] = set()
        self._held: dict[str, list[Update]] = {}
        self._hidden: set[str] = set()
        self._shown: set[str] = set()
        self._asker: dict[str, str] = {}
        """Request id -> the child asking."""

    # -- input ------------------------------------------------------------------------------

    def route(self, event: dict[str, Any], outputs: list[Output], *, replaying: bool = False) -> list[Output]:
        """``outputs`` (the projection's for ``event``) rerouted, with the child-session updates
        ``event`` makes, in the order the editor must see them."""
        kind = event.get("kind")
        before: list[Output] = []
        after: list[Output] = []
        if kind == "ActionEvent":
            self._remember_launch(event.get("tool_call_id"), event.get("arguments"), native=event.get("tool_name") == "task")
        elif kind == "ACPToolCallEvent":
            self._remember_launch(event.get("tool_call_id"), event.get("raw_input"), native=False)
        elif kind == "SubagentStartedEvent":
            before = self._started(event, replaying)
        elif kind == "MessageEvent" and event.get("role") == "user":
            child = self.children.get(event.get("subagent_id") or "")
            if child is not None and not child.prompted and isinstance(event.get("content"), str):
                before = self._prompt_pair(child, event["content"])
        elif kind == "SubagentFinishedEvent":
            after = self._finished(event)
        elif kind == "ConversationStateUpdateEvent" and event.get("key") == "work_state":
            after = self._reported_state(event, replaying)
        if not outputs:
            return [*before, *after]
        routed = [out for output in outputs for out in self._reroute(output)]
        return [*before, *routed, *after] if before or after else routed

    def current_states(self) -> list[Update]:
        """After ``session/load``'s answer: each child's state now, with its cancel capability
        if it can still be cancelled."""
        updates = []
        for child in self.children.values():
            patch: dict[str, Any] = {"state": child.state}
            if child.cancellable and not child.finished:
                patch["capabilities"] = {"cancel": {}}
            updates.append(self._subagent_update(child, patch))
        return updates

    def child(self, session_id: str) -> Child | None:
        return self.children.get(session_id)

    # -- announcing, messages, states --------------------------------------------------------

    def _remember_launch(self, call_id: Any, arguments: Any, *, native: bool) -> None:
        if not isinstance(call_id, str):
            return
        if native:
            self._native_launches.add(call_id)
        prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
        if isinstance(prompt, str) and prompt:
            self._prompts.setdefault(call_id, prompt)

    def _started(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        child_id, launch = event.get("subagent_id"), event.get("parent_tool_use_id")
        if not isinstance(child_id, str) or not child_id or child_id in self.children or child_id == self.root_id:
            return []
        parent = event.get("parent_subagent_id")
        parent_session = parent if isinstance(parent, str) and parent in self.children else None
        launch = launch if isinstance(launch, str) else None
        inherited = self.children[parent_session].cwd if parent_session is not None else self.workspace
        own = event.get("cwd") if isinstance(event.get("cwd"), str) and event["cwd"].startswith("/") else None
        child = self.children[child_id] = Child(child_id, parent_session, launch, launch in self._native_launches,
                                                own or inherited)
        kind = event.get("subagent_type") or ""
        title = event.get("description") or event.get("label") or kind or "Sub-agent"
        patch: dict[str, Any] = {"title": title, "state": child.state}
        if kind and kind != title:
            patch["description"] = kind
        if own is not None and own != inherited:  # a sub-agent in its own folder (a worktree)
            patch["cwd"] = own
        if child.cancellable and not replaying:
            patch["capabilities"] = {"cancel": {}}
        out: list[Output] = [self._subagent_update(child, patch)]
        if launch is not None and launch not in self._shown:  # a call already shown stays shown
            self._hidden.add(launch)
            self._held.pop(launch, None)
            if launch in self._prompts:
                out += self._prompt_pair(child, self._prompts[launch])
        return out

    def _prompt_pair(self, child: Child, text: str) -> list[Output]:
        child.prompted = True
        if child.launch is None:
            return []
        message_id = child.launch
        sender = child.parent_session or self.root_id
        content = [{"type": "text", "text": text}]
        common = {"sessionUpdate": "session_message", "messageId": message_id, "senderSessionId": sender,
                  "recipientSessionId": child.id, "content": content}
        return [Update({**common, "recipientMessageId": message_id}, child.parent_session, raw=True),
                Update({**common, "senderMessageId": message_id}, child.id, raw=True)]

    def _finished(self, event: dict[str, Any]) -> list[Output]:
        child = self.children.get(event.get("subagent_id") or "")
        if child is None or child.finished:
            return []
        child.finished = True
        status = event.get("status") or "completed"
        result = event.get("result") if isinstance(event.get("result"), str) else ""
        out: list[Output] = []
        if status == "completed" and result and child.launch is not None:
            out.append(Update({"sessionUpdate": "session_message", "messageId": f"{child.launch}:reply",
                               "senderSessionId": child.id, "recipientSessionId": child.parent_session or self.root_id,
                               "content": [{"type": "text", "text": result}]}, child.parent_session, raw=True))
        state: dict[str, Any] = {"state": "idle", "stopReason": END_REASONS.get(status, "end_turn")}
        if status == "error":
            state["error"] = {"code": SUBAGENT_ERROR, "message": result or "the sub-agent failed"}
        out.append(self._set_state(child, state))
        return out

    def _reported_state(self, event: dict[str, Any], replaying: bool = False) -> list[Output]:
        child = self.children.get(event.get("subagent_id") or "")
        value = event.get("value")
        if child is None or not isinstance(value, dict) or not isinstance(value.get("state"), str):
            return []
        state: dict[str, Any] = {"state": value["state"]}
        if isinstance(value.get("stop_reason"), str):
            state["stopReason"] = value["stop_reason"]
        if isinstance(value.get("error"), dict):
            state["error"] = {"code": SUBAGENT_ERROR, **value["error"]}
        elif isinstance(value.get("error"), str):
            state["error"] = {"code": SUBAGENT_ERROR, "message": value["error"]}
        if value.get("cancellable") is True and not child.cancellable and not child.finished:
            # A peer's child its backend can stop alone (an ACP child session with the capability).
            child.cancellable = True
            child.state = state
            if replaying:  # replayed states are history: the capability follows the load's answer
                return [self._subagent_update(child, {"state": state})]
            return [self._subagent_update(child, {"state": state, "capabilities": {"cancel": {}}})]
        return [self._set_state(child, state)]

    def _set_state(self, child: Child, state: dict[str, Any]) -> Update:
        child.state = state
        return self._subagent_update(child, {"state": state})

    def _subagent_update(self, child: Child, patch: dict[str, Any]) -> Update:
        return Update({"sessionUpdate": "subagent_update", "sessionId": child.id, **patch}, child.parent_session, raw=True)

    # -- rerouting the projection's outputs ----------------------------------------------------

    def _reroute(self, output: Output) -> list[Output]:
        if isinstance(output, Update):
            return self._update(output)
        if isinstance(output, Ask):
            child = self.children.get(_subagent_of(output.tool_call))
            if child is None:
                return [output]
            child.asking.add(output.request_id)
            self._asker[output.request_id] = child.id
            out: list[Output] = []
            if child.state.get("state") != "requires_action" and not child.finished:
                out.append(self._set_state(child, {"state": "requires_action"}))
            return [*out, replace(output, session_id=child.id)]
        if isinstance(output, Settled):
            child = self.children.get(self._asker.pop(output.request_id, ""))
            if child is None:
                return [output]
            child.asking.discard(output.request_id)
            if not child.asking and not child.finished and child.state.get("state") == "requires_action":
                return [output, self._set_state(child, {"state": "running"})]
            return [output]
        if isinstance(output, RunEnded):
            return [*self._release_held(), output]
        return [output]

    def _update(self, update: Update) -> list[Output]:
        payload = update.payload
        child = self.children.get(_subagent_of(payload))
        routed = update if child is None else Update(payload, child.id)
        call_id = payload.get("toolCallId")
        if not self.hold_launches or payload.get("sessionUpdate") not in ("tool_call", "tool_call_update") \
                or not isinstance(call_id, str) or call_id in self._shown:
            return [routed]
        if call_id in self._hidden:
            return []
        is_launch = (payload.get("_meta") or {}).get("claudeCode", {}).get("toolName") == AGENT_TOOL_NAME
        if call_id not in self._held and not (is_launch and payload["sessionUpdate"] == "tool_call"):
            self._shown.add(call_id)
            return [routed]
        held = self._held.setdefault(call_id, [])
        held.append(routed)
        if payload.get("status") in TERMINAL:  # it ended and no child came of it: show it whole
            return list(self._held.pop(call_id))
        return []

    def _release_held(self) -> list[Output]:
        """The run ended: launches that never became a child are shown as they went."""
        held = [update for updates in self._held.values() for update in updates]
        self._shown.update(self._held)
        self._held.clear()
        return held


def _subagent_of(payload: dict[str, Any]) -> str:
    """The sub-agent an update or a ``toolCall`` is stamped with (``""``: the main agent's)."""
    meta = payload.get("_meta")
    taskwire = meta.get("taskwire") if isinstance(meta, dict) else None
    subagent = taskwire.get("subagentId") if isinstance(taskwire, dict) else None
    return subagent if isinstance(subagent, str) else ""
