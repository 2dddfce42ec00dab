"""Sans-I/O: the subagents RFD's child sessions folded back into the one-session form.

An agent that serves its sub-agents as child sessions (claude-agent-acp 0.90+, to a client
that declared ``clientCapabilities.subagents``) announces each child on its parent session with
a ``subagent_update``, sends the delegation and the answer as ``session_message``s, the child's
own traffic under the child's session id, and no tool call for the launch.

``ChildSessions`` turns that back into what the flattened form sends, so the one
``SessionMapper`` makes the same tree out of both: for each child session ``C`` it learns the
launching Agent call's id ``L`` (the prompt message's ``messageId``, else a child frame's
``_meta.claudeCode.parentToolUseId``), synthesizes the parent's Agent ``tool_call`` for ``L``
(its input names the prompt), passes the child's frames on stamped with ``L``, and closes the
synthesized call when the child ends (its result the ``L:reply`` answer). Each change of a
child's work state becomes a ``SubagentWorkState`` action.

Bad input is logged and skipped, never guessed at: a state patch for a child never announced, a
``session_message`` naming no known session. A child's frames that come before the child can be
placed are held and passed on once it is (or, at the turn's end, only if they name their
launch themselves).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from .mapping import Action, SessionMapper, StartSubagent, SubagentWorkState
from .toolcalls import parent_of, text_of

log = logging.getLogger(__name__)

RFD_UPDATES = frozenset({"subagent_update", "session_message", "session_message_chunk"})
PARENT_MOVES = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"})
"""The parent's own frames that say it went on: an answer still awaited will not come now."""
"""``sessionUpdate`` kinds of the subagents RFD (the Python ACP package knows none of them)."""
HELD_LIMIT = 2000
"""Most frames held for one child session that cannot be placed yet."""

_END_STATUS = {"end_turn": "completed", "max_tokens": "completed", "max_turn_requests": "completed", "cancelled": "cancelled"}
"""A child's stop reason -> the status of its (synthesized) Agent call; any other -> ``failed``."""


@dataclass(slots=True)
class Child:
    """One child session as the agent announced it."""

    session_id: str
    title: str = ""
    description: str = ""
    cwd: str | None = None
    cancellable: bool = False
    state: dict[str, Any] = field(default_factory=dict)
    """The last work-state value (``{"state": ..., "stop_reason"?, "error"?}``)."""
    launch_id: str | None = None
    """``L``: the Agent call that launched it, once known."""
    prompt: str | None = None
    reply: str | None = None
    said: str = ""
    """Its last message's text so far (the answer, if no reply message comes)."""
    said_id: Any = None
    ended: bool = False
    """Its end state came; the synthesized call closes at the reply (or the next other frame)."""
    closed: bool = False
    parent: "Child | None" = None
    """The child whose session announced it (a sub-agent's sub-agent); ``None`` under the root."""
    held: list[tuple[Literal["update", "permission"], dict[str, Any]]] = field(default_factory=list)


def work_state(state: Any) -> dict[str, Any] | None:
    """An RFD ``state`` object as taskwire's ``work_state`` value; ``None`` if it is none."""
    if not isinstance(state, dict) or state.get("state") not in ("running", "requires_action", "idle", "unknown"):
        return None
    value: dict[str, Any] = {"state": state["state"]}
    if state["state"] == "idle":
        if isinstance(state.get("stopReason"), str):
            value["stop_reason"] = state["stopReason"]
        error = state.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            value["error"] = error["message"]
        elif isinstance(error, str):
            value["error"] = error
    return value


class ChildSessions:
    """Folds one ACP session's child sessions into ``mapper``'s input. No I/O.

    Feed every ``session/update`` params (``receive``) and ``session/request_permission`` params
    (``receive_permission``) in wire order, and call ``end_turn`` before the mapper's own
    turn end. A peer that never announces a child passes through untouched.
    """

    def __init__(self, mapper: SessionMapper) -> None:
        self.mapper = mapper
        self.root_session_id = ""
        self.children: dict[str, Child] = {}
        """By child session id."""
        self._by_launch: dict[str, Child] = {}
        self._unplaced: dict[str, Child] = {}
        """Sessions that sent frames before any announcement, by session id."""
        self._ending: dict[str, Child] = {}
        """Children that ended whose launch is not closed yet (checked at every frame)."""

    @property
    def active(self) -> bool:
        """Whether the agent uses the child-session form (it announced a child)."""
        return bool(self.children)

    def child_of_launch(self, launch_id: str | None) -> Child | None:
        return self._by_launch.get(launch_id) if launch_id is not None else None

    def unplaced(self, session_id: Any) -> bool:
        """Whether ``session_id`` is a child session (not the root) not placed under a launch."""
        if not isinstance(session_id, str) or not self.root_session_id or session_id == self.root_session_id:
            return False
        return self.launch_of(session_id) is None

    def launch_of(self, session_id: Any) -> str | None:
        """The launch of the child session ``session_id`` (``None``: the root, or not placed)."""
        child = self.children.get(session_id) if isinstance(session_id, str) else None
        return child.launch_id if child is not None else None

    def live(self) -> list[Child]:
        """Children announced and not ended."""
        return [c for c in self.children.values() if not c.ended and not c.closed]

    def learn(self, replayed: list[dict[str, Any]]) -> None:
        """A ``session/load``'s replay (``session/update`` params): history already stored.
        Learn each child and its launch (the same ids as live), emit nothing; each ended."""
        scratch = ChildSessions(SessionMapper())
        scratch.root_session_id = self.root_session_id
        for params in replayed:
            scratch.receive(params)
        for child in scratch.children.values():
            if child.session_id in self.children:
                continue
            child.ended = child.closed = True
            child.held = []
            self.children[child.session_id] = child
            if child.launch_id is not None:
                self._by_launch.setdefault(child.launch_id, child)

    # -- input ------------------------------------------------------------------------------

    def receive(self, params: dict[str, Any]) -> list[Action]:
        """One ``session/update``'s params."""
        update = params.get("update")
        if not isinstance(update, dict):
            return []
        session_id = params.get("sessionId")
        kind = update.get("sessionUpdate")
        on_root = not self.root_session_id or session_id == self.root_session_id or session_id is None
        actions: list[Action] = []
        if kind == "subagent_update":
            return self._subagent_update(update, session_id)
        if kind == "session_message":
            return self._session_message(update, session_id)
        if kind == "session_message_chunk":
            return []  # claude-agent-acp never sends them; the whole message follows anyway
        if on_root:
            if kind in PARENT_MOVES:
                self._flush_ended(actions, but=None, waiting_replies=True)
            actions.extend(self.mapper.receive_update(update))
            return actions
        return self._child_frame("update", str(session_id), update)

    def receive_permission(self, params: dict[str, Any]) -> list[Action]:
        """One ``session/request_permission``'s params; a child's request is stamped with its
        launch (the mapper files the call there)."""
        session_id = params.get("sessionId")
        if not self.root_session_id or session_id in (None, self.root_session_id):
            return self.mapper.receive_permission_request(params)
        return self._child_frame("permission", str(session_id), params)

    def end_turn(self) -> list[Action]:
        """The turn ends: close the calls of children that ended, place or report held frames."""
        actions: list[Action] = []
        self._flush_ended(actions, but=None, waiting_replies=True)
        for pending in [*self._unplaced.values(), *(c for c in self.children.values() if c.held)]:
            held, pending.held = pending.held, []
            for kind, payload in held:
                frame = payload.get("toolCall") if kind == "permission" else payload
                if isinstance(frame, dict) and parent_of(frame) is not None:
                    actions.extend(self._to_mapper(kind, payload))  # it names its launch itself
                else:
                    log.warning("ACP child session %s: a frame that names no launch was never placed; skipped", pending.session_id)
        self._unplaced.clear()
        return actions

    # -- the RFD's messages -----------------------------------------------------------------

    def _subagent_update(self, update: dict[str, Any], on_session: Any) -> list[Action]:
        child_id = update.get("sessionId")
        if not isinstance(child_id, str) or not child_id:
            log.warning("ACP subagent_update names no child session; skipped")
            return []
        child = self.children.get(child_id)
        announcing = child is None
        if child is None:
            if not any(k in update for k in ("title", "description", "capabilities")):
                log.warning("ACP subagent_update for child session %s, never announced; skipped", child_id)
                return []
            child = self.children[child_id] = Child(child_id, parent=self.children.get(on_session))
            self._adopt_unplaced(child)
        if isinstance(update.get("title"), str):
            child.title = update["title"]
        if isinstance(update.get("description"), str):
            child.description = update["description"]
        if "cwd" in update:
            child.cwd = update["cwd"] if isinstance(update["cwd"], str) else None
        if "capabilities" in update:
            caps = update["capabilities"]
            child.cancellable = isinstance(caps, dict) and isinstance(caps.get("cancel"), dict)
        actions: list[Action] = []
        state = work_state(update.get("state"))
        if state is not None:
            if child.closed:
                log.info("ACP child session %s reported %s after it ended; not reopened", child_id, state["state"])
                return []
            child.state = state
            child.ended = state["state"] == "idle"
            if child.ended:
                self._ending[child_id] = child
            if child.launch_id is not None:
                actions.append(SubagentWorkState(child.launch_id, state))
        if announcing:
            self._place(child, actions)
        return actions

    def _session_message(self, update: dict[str, Any], on_session: Any) -> list[Action]:
        message_id = update.get("messageId")
        if not isinstance(message_id, str):
            log.warning("ACP session_message without a messageId; skipped")
            return []
        text = text_of(update.get("content"))
        if message_id.endswith(":reply"):
            child = self._by_launch.get(message_id.removesuffix(":reply"))
            if child is None:
                log.warning("ACP session_message %s answers no known launch; skipped", message_id)
                return []
            child.reply = text
            actions: list[Action] = []
            if child.ended:
                self._close(child, actions)
            return actions
        recipient = update.get("recipientSessionId")
        child = self.children.get(recipient) if isinstance(recipient, str) else None
        if child is None:
            if on_session != self.root_session_id and on_session in self.children:
                return []  # the child's copy of a delegation from a parent we do not know
            log.warning("ACP session_message %s names no known session (recipient %r); skipped", message_id, recipient)
            return []
        sender = update.get("senderSessionId")
        if on_session != (sender if isinstance(sender, str) else self.root_session_id):
            return []  # the child's (incoming) copy of the delegation: the sender's was used
        actions = []
        if child.launch_id is None:
            child.prompt = text
            self._link(child, message_id, actions)
        elif child.launch_id == message_id and child.prompt is None and text:
            child.prompt = text
            actions.extend(self.mapper.receive_update(self._launch_update(child)))
        # A later delegation to a child already placed (SendMessage) stays in its stream.
        return actions

    # -- child traffic ----------------------------------------------------------------------

    def _child_frame(self, kind: Literal["update", "permission"], session_id: str, payload: dict[str, Any]) -> list[Action]:
        actions: list[Action] = []
        self._flush_ended(actions, but=session_id, waiting_replies=False)
        child = self.children.get(session_id)
        if child is not None and kind == "update" and payload.get("sessionUpdate") == "agent_message_chunk":
            self._said(child, payload)
        if child is None:
            pending = self._unplaced.setdefault(session_id, Child(session_id))
            self._hold(pending, kind, payload)
            return actions
        if child.launch_id is None:
            frame = payload.get("toolCall") if kind == "permission" else payload
            launch = parent_of(frame) if isinstance(frame, dict) else None
            if launch is None:
                self._hold(child, kind, payload)
                return actions
            self._link(child, launch, actions)
        actions.extend(self._to_mapper(kind, self._stamped(child, kind, payload)))
        return actions

    def _hold(self, child: Child, kind: Literal["update", "permission"], payload: dict[str, Any]) -> None:
        if len(child.held) >= HELD_LIMIT:
            log.warning("ACP child session %s: too many frames before it could be placed; one skipped", child.session_id)
            return
        child.held.append((kind, payload))

    def _stamped(self, child: Child, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` naming the child's launch as its parent (when it does not already)."""
        frame = payload.get("toolCall") if kind == "permission" else payload
        if not isinstance(frame, dict) or parent_of(frame) is not None:
            return payload
        meta = dict(frame.get("_meta") or {})
        meta["claudeCode"] = {**(meta.get("claudeCode") or {}), "parentToolUseId": child.launch_id}
        stamped = {**frame, "_meta": meta}
        return {**payload, "toolCall": stamped} if kind == "permission" else stamped

    def _to_mapper(self, kind: str, payload: dict[str, Any]) -> list[Action]:
        if kind == "permission":
            return self.mapper.receive_permission_request(payload)
        return self.mapper.receive_update(payload)

    # -- placing a child under its launch ---------------------------------------------------

    def _adopt_unplaced(self, child: Child) -> None:
        early = self._unplaced.pop(child.session_id, None)
        if early is not None:
            child.held = early.held

    def _place(self, child: Child, actions: list[Action]) -> None:
        # An announcement alone does not name the launch: the prompt message (next) does, or
        # a held frame that carries its parent.
        for kind, payload in child.held:
            frame = payload.get("toolCall") if kind == "permission" else payload
            launch = parent_of(frame) if isinstance(frame, dict) else None
            if launch is not None:
                self._link(child, launch, actions)
                return

    def _link(self, child: Child, launch_id: str, actions: list[Action]) -> None:
        """``child`` was launched by ``launch_id``: synthesize the launch, start the sub-agent,
        report its state, then pass on what it sent before."""
        if launch_id in self._by_launch:
            log.warning("ACP child session %s claims launch %s, already another's; skipped", child.session_id, launch_id)
            return
        child.launch_id = launch_id
        self._by_launch[launch_id] = child
        for action in self.mapper.receive_update(self._launch_update(child)):
            if isinstance(action, StartSubagent) and action.tool_call_id == launch_id:
                action = dataclasses.replace(action, cwd=child.cwd)
            actions.append(action)
        if child.state:
            actions.append(SubagentWorkState(launch_id, child.state))
        held, child.held = child.held, []
        for kind, payload in held:
            actions.extend(self._to_mapper(kind, self._stamped(child, kind, payload)))
        if child.ended and child.reply is not None:
            self._close(child, actions)

    def _launch_update(self, child: Child) -> dict[str, Any]:
        """The Agent ``tool_call`` the flattened form would have sent for ``child``'s launch."""
        raw_input: dict[str, Any] = {"description": child.title, "subagent_type": child.description or "general-purpose"}
        if child.prompt:
            raw_input["prompt"] = child.prompt
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": child.launch_id,
            "title": child.title or "Task",
            "kind": "think",
            "status": "pending",
            "rawInput": raw_input,
            "content": [{"type": "content", "content": {"type": "text", "text": child.prompt}}] if child.prompt else [],
            "_meta": self._launch_meta(child),
        }

    def _launch_meta(self, child: Child) -> dict[str, Any]:
        # A launch from a child session is that child's call, as the flattened form stamps it.
        parent = child.parent.launch_id if child.parent is not None else None
        return {"claudeCode": {"toolName": "Agent", **({"parentToolUseId": parent} if parent else {})}}

    def _said(self, child: Child, update: dict[str, Any]) -> None:
        message_id = update.get("messageId")
        if message_id != child.said_id:
            child.said, child.said_id = "", message_id
        child.said += text_of(update.get("content"))

    def _flush_ended(self, actions: list[Action], *, but: str | None, waiting_replies: bool) -> None:
        """Close the calls of children that ended: those that answer nobody (cancelled, failed)
        at the next frame of another session; those whose reply is awaited (``end_turn``) only
        once ``waiting_replies`` says it will not come (the parent went on, the turn ended)."""
        for child in list(self._ending.values()):
            if child.closed or child.launch_id is None or child.session_id == but:
                continue
            if waiting_replies or child.state.get("stop_reason") not in (None, "end_turn"):
                self._close(child, actions)

    def _close(self, child: Child, actions: list[Action]) -> None:
        child.closed = True
        self._ending.pop(child.session_id, None)
        reason = child.state.get("stop_reason")
        status = _END_STATUS.get(reason, "completed" if reason is None else "failed")
        text = child.reply or (child.state.get("error") if status == "failed" else None) or child.said.strip()
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": child.launch_id,
            "status": status,
            "_meta": self._launch_meta(child),
        }
        # The answer replaces the prompt the synthesized call showed (as the flattened form does).
        update["content"] = [{"type": "content", "content": {"type": "text", "text": text}}] if text else []
        actions.extend(self.mapper.receive_update(update))
