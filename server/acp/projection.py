"""Sans-I/O: taskwire events in, ACP ``session/update`` payloads out (the agent side).

``ACPProjection`` is fed one session's events as the socket sends them (wire dicts: stored
records in ``seq`` order, ephemeral deltas between them) and answers with ``Update``s, the
``update`` objects of ``session/update`` notifications in wire form, and a ``RunEnded`` when the
root's run ends. Both ways of running ``taskwire acp`` (embedded, attached) feed it the same
frames, and ``session/load`` feeds it the stored log. It owns DESIGN.md's ACP projection:

- every update a sub-agent produced carries ``_meta.claudeCode.parentToolUseId`` (the event's
  innermost ``parent_tool_use_id``) and ``_meta.taskwire.subagentId``; main-agent updates carry
  neither, so nesting at any depth follows from the innermost stamp;
- model text is ``agent_message_chunk``: deltas go out as they stream, and the stored text then
  adds only what they did not carry (a replay, which has no deltas, sends the same text whole);
  thinking is ``agent_thought_chunk``, live only (it is never stored);
- a tool call is ``tool_call`` then ``tool_call_update``s: ``pending``, ``in_progress`` (the
  native runtime runs a call as soon as it is recorded), ``completed`` or ``failed``; the
  ``task`` call is kind ``other`` with ``_meta.claudeCode.toolName: "Agent"``;
- ACP v1 has no ``cancelled`` status: a call the closing rule made ``cancelled`` is sent
  ``failed``, with ``_meta.taskwire.status: "cancelled"``;
- when the root's run ends, calls still open are closed by the closing rule
  (``server/events/closing.py``), each update with its own call's stamp;
- a permission request of the tree, at any depth, is an ``Ask`` (``session/request_permission``,
  ``server/acp/permissions.py``) when the root's ``pending_permissions`` names it and a
  ``Settled`` when it leaves that set; its call goes back to ``pending`` while it waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from taskwire_client.retries import retry_line

from .call_view import AGENT_TOOL_NAME, acp_kind, native_call, peer_content
from .permissions import PermissionDesk
from .text_lane import TextLane
from .toolcalls import TERMINAL, text_block
from .updates import Output, RunEnded, Update, merge_meta, stamp_meta, text_chunk, wire_status, with_meta
from ..events.closing import closing_status, closing_text

RUN_ENDS = frozenset({"finished", "error", "paused"})
CLOSE_REASONS = {"finished": "the run ended", "error": "the run failed", "paused": "the run was stopped"}
RUNNING_STATUSES = frozenset({"in_progress", "completed", "failed"})
RETRY_KEYS = ("attempt", "max_attempts", "delay", "reason", "error", "status_code", "discard_text")


@dataclass(slots=True)
class _Call:
    """A tool call sent ``tool_call`` and not closed yet."""

    meta: dict[str, Any]
    """The ``_meta`` on each of its updates: its stamp, and what names its tool."""
    content: list[dict[str, Any]] | None = None
    keep_content: bool = False
    ran: bool = False


class ACPProjection:
    """One ACP session's view of a conversation tree. No I/O.

    Feed ``receive`` every frame in order (``replaying=True`` for ``session/load``'s stored
    log); call ``expect_prompt`` before sending a prompt (it is not echoed back), ``resumed``
    after the feed reconnected (deltas may be lost), ``close_open`` to close every call still
    open when the run's end cannot be awaited.
    """

    def __init__(self, *, workspace: str | None = None, context_window: int | None = None) -> None:
        """``workspace``: the conversation's folder, to make file paths absolute.
        ``context_window``: the model's window in tokens; without it no ``usage_update`` is
        sent (ACP requires the window's size)."""
        self.workspace = workspace
        self.context_window = context_window
        self._calls: dict[str, _Call] = {}
        self._peer_seen: set[str] = set()
        self._closed_by_rule: set[str] = set()
        """Calls ``close_open`` closed: a result that still comes corrects them, never restarts them."""
        self._spawning: set[str] = set()
        self._finishing: set[str] = set()
        self._lanes: dict[str | None, TextLane] = {}
        self._resumed = False
        self._prompt: str | None = None
        self._error: tuple[str | None, str | None] | None = None
        self._usage: dict[str, int] = {}
        self._desk = PermissionDesk(workspace)
        self._handlers: dict[str, Callable[[dict[str, Any], bool], list[Output]]] = {
            "StreamingDeltaEvent": self._delta,
            "MessageEvent": self._message,
            "ActionEvent": self._action,
            "ObservationEvent": self._observation,
            "ACPToolCallEvent": self._peer_call,
            "SubagentStartedEvent": self._subagent_started,
            "SubagentFinishedEvent": self._subagent_finished,
            "AgentErrorEvent": self._agent_error,
            "LLMRetryEvent": self._llm_retry,
            "ConversationStateUpdateEvent": self._state,
            "PermissionRequestEvent": self._permission_request,
            "PermissionResolvedEvent": self._permission_resolved,
        }

    # -- input ------------------------------------------------------------------------------

    def receive(self, event: dict[str, Any], *, replaying: bool = False) -> list[Output]:
        """One event; kinds it does not know give nothing."""
        handler = self._handlers.get(event.get("kind", ""))
        return handler(event, replaying) if handler is not None else []

    def expect_prompt(self, text: str | None) -> None:
        """The next root user message with this text is the client's own prompt: not echoed
        (``None``: expect none)."""
        self._prompt = text

    def resumed(self) -> None:
        """The feed reconnected: deltas in between are lost, so every lane waits for its stored
        text (which then goes out whole past what was streamed) until the run ends."""
        self._resumed = True
        for lane in self._lanes.values():
            lane.broken = True

    @property
    def open_calls(self) -> list[str]:
        """Calls sent and not closed, in the order they started."""
        return list(self._calls)

    def close_open(self, reason: str) -> list[Update]:
        """Close every call still open by the closing rule, latest (deepest) first."""
        updates = []
        for call_id in reversed(list(self._calls)):
            call = self._calls.pop(call_id)
            self._closed_by_rule.add(call_id)
            status = closing_status(call.ran)
            content = [*(call.content or []), text_block(closing_text(call.ran, reason))]
            payload = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": wire_status(status),
                       "content": content}
            updates.append(Update(with_meta(payload, merge_meta(call.meta, {"taskwire": {"status": status}}))))
        return updates

    # -- text -------------------------------------------------------------------------------

    def _lane(self, event: dict[str, Any]) -> TextLane:
        key = event.get("subagent_id")
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = TextLane(broken=self._resumed)
        return lane

    def _delta(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        text = event.get("content")
        if not isinstance(text, str) or not text:
            return []
        if event.get("channel") == "thought":
            return [text_chunk("agent_thought_chunk", text, stamp_meta(event))]
        text = self._lane(event).delta(text)
        return [text_chunk("agent_message_chunk", text, stamp_meta(event))] if text else []

    def _stored_text(self, event: dict[str, Any], text: Any) -> list[Output]:
        """Stored text: what the lane's deltas did not already send."""
        if not isinstance(text, str) or not text:
            return []
        rest = self._lane(event).stored(text)
        return [text_chunk("agent_message_chunk", rest, stamp_meta(event))] if rest else []

    def _llm_retry(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        """A thought chunk a person reads ("retrying in 4 s (429)"), the record in
        ``_meta.taskwire.llmRetry``; text the failed attempt streamed is not sent again."""
        if event.get("discard_text"):
            self._lane(event).retried()
        line = retry_line(event)
        record = {key: event[key] for key in RETRY_KEYS if event.get(key) is not None}
        meta = merge_meta(stamp_meta(event), {"taskwire": {"llmRetry": record}})
        return [text_chunk("agent_thought_chunk", line, meta)]

    def _message(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        role, content = event.get("role"), event.get("content")
        if role == "assistant":
            return self._stored_text(event, content)
        if role != "user" or event.get("parent_tool_use_id") or not isinstance(content, str):
            return []  # a sub-agent's prompt is its task call's input already
        self._lane(event).text_open = False
        if not replaying and self._prompt is not None and content == self._prompt:
            self._prompt = None
            return []
        return [text_chunk("user_message_chunk", content, {})]

    def _agent_error(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        error = event.get("error") if isinstance(event.get("error"), str) else "unknown error"
        if event.get("parent_tool_use_id"):
            return self._stored_text(event, f"Error: {error}")
        self._error = (error, event.get("code"))
        # Live, the prompt's JSON-RPC error carries it; a replay has no prompt to answer.
        return self._stored_text(event, f"Error: {error}") if replaying else []

    # -- tool calls -------------------------------------------------------------------------

    def _start(self, event: dict[str, Any], call_id: str, call: _Call, fields: dict[str, Any]) -> Update:
        self._calls[call_id] = call
        self._lane(event).text_open = False
        return Update(with_meta({"sessionUpdate": "tool_call", "toolCallId": call_id, **fields}, call.meta))

    def _action(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        outputs = self._stored_text(event, event.get("thought"))
        call_id, name = event.get("tool_call_id"), event.get("tool_name") or ""
        arguments = event.get("arguments") if isinstance(event.get("arguments"), dict) else {}
        if not isinstance(call_id, str) or not call_id or call_id in self._calls:
            return outputs
        # A native response's text is stored before its calls: what streamed and was not
        # stored (a thought-less response) is over.
        self._lane(event).streamed = ""
        if name == "finish":
            # The run's final answer: text, not a tool call.
            self._finishing.add(call_id)
            return outputs + self._stored_text(event, arguments.get("message"))
        view = native_call(name, arguments, self.workspace)
        meta = merge_meta(stamp_meta(event), view.meta, {"taskwire": {"toolName": name}})
        fields: dict[str, Any] = {"title": view.title, "kind": view.kind, "status": "pending", "rawInput": arguments}
        if view.content:
            fields["content"] = view.content
        if view.locations:
            fields["locations"] = view.locations
        call = _Call(meta, view.content, view.keep_content, ran=True)
        outputs.append(self._start(event, call_id, call, fields))
        outputs.append(Update(with_meta({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}, meta)))
        return outputs

    def _observation(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        call_id = event.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            return []
        if call_id in self._finishing:
            self._finishing.discard(call_id)
            return []
        outputs: list[Output] = []
        call = self._calls.pop(call_id, None)
        if call is None:
            name = event.get("tool_name") or ""
            view = native_call(name, {}, None)
            call = _Call(merge_meta(stamp_meta(event), view.meta, {"taskwire": {"toolName": name}}))
            if call_id not in self._closed_by_rule:  # its start came before this feed: show it whole
                outputs.append(self._start(event, call_id, call, {"title": view.title, "kind": view.kind}))
                self._calls.pop(call_id)
        status = event.get("status") or ("failed" if event.get("is_error") else "completed")
        text = event.get("content") if isinstance(event.get("content"), str) else ""
        content = [*(call.content or [])] if call.keep_content else []
        if text:
            content.append(text_block(text))
        payload = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": wire_status(status),
                   "rawOutput": {"content": text, "isError": bool(event.get("is_error"))}, "content": content}
        meta = merge_meta(call.meta, {"taskwire": {"status": status}}) if status == "cancelled" else call.meta
        self._lane(event).text_open = False
        outputs.append(Update(with_meta(payload, meta)))
        return outputs

    def _peer_call(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        """A bridged peer's call (Claude Code's, under an ``acp`` or ``claude_sdk`` agent): each
        event holds the call's whole state."""
        call_id = event.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            return []
        first = call_id not in self._peer_seen
        self._peer_seen.add(call_id)
        call = self._calls.get(call_id) or _Call({})
        agent = call_id in self._spawning or _looks_like_agent_call(event)
        call.meta = merge_meta(stamp_meta(event), {"claudeCode": {"toolName": AGENT_TOOL_NAME}} if agent else {})
        fields: dict[str, Any] = {}
        if first or event.get("title"):
            fields["title"] = event.get("title") or "Tool call"
        if acp_kind(event.get("tool_kind")):
            fields["kind"] = acp_kind(event.get("tool_kind"))
        status = event.get("status")
        if isinstance(status, str):
            fields["status"] = wire_status(status)
            call.ran = call.ran or status in RUNNING_STATUSES
        for key, wire in (("raw_input", "rawInput"), ("raw_output", "rawOutput")):
            if key in event:
                fields[wire] = event[key]
        content = peer_content(event.get("content"))
        if content is not None:
            fields["content"] = call.content = content
        meta = merge_meta(call.meta, {"taskwire": {"status": status}}) if status == "cancelled" else call.meta
        if status in TERMINAL:
            self._calls.pop(call_id, None)
        else:
            self._calls[call_id] = call
        self._lane(event).text_open = False
        kind = "tool_call" if first else "tool_call_update"
        return [Update(with_meta({"sessionUpdate": kind, "toolCallId": call_id, **fields}, meta))]

    # -- sub-agents and state ---------------------------------------------------------------

    def _subagent_started(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        spawning = event.get("parent_tool_use_id")
        if not isinstance(spawning, str) or spawning in self._spawning:
            return []
        self._spawning.add(spawning)
        call = self._calls.get(spawning)
        if call is None or call.meta.get("claudeCode", {}).get("toolName") == AGENT_TOOL_NAME:
            return []
        # A peer's call that turned out to spawn a sub-agent: say so, as Claude Code would.
        call.meta = merge_meta(call.meta, {"claudeCode": {"toolName": AGENT_TOOL_NAME}})
        return [Update(with_meta({"sessionUpdate": "tool_call_update", "toolCallId": spawning}, call.meta))]

    def _subagent_finished(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        self._lanes.pop(event.get("subagent_id"), None)  # its stream ends here
        return []

    def _state(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        if event.get("parent_tool_use_id"):
            return []  # a sub-agent's own status and usage
        key, value = event.get("key"), event.get("value")
        if key == "pending_permissions":
            return list(self._desk.pending(value))
        if key == "usage" and isinstance(value, dict):
            return self._usage_update(value)
        if key != "status":
            return []
        if value == "running":
            self._error = None
        if value not in RUN_ENDS:
            return []
        outputs: list[Output] = [*self.close_open(CLOSE_REASONS[value])]
        error, code = self._error or (None, None)
        outputs.append(RunEnded(int(event.get("seq") or 0), value, error, code, event.get("reason")))
        self._error, self._resumed, self._finishing = None, False, set()
        for lane in self._lanes.values():
            lane.ended()
        return outputs

    def _permission_request(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        """The call waits for a person: back to ``pending`` (the ask itself comes with the pending set)."""
        self._desk.request(event)
        return self._call_status(event.get("tool_call_id"), "pending")

    def _permission_resolved(self, event: dict[str, Any], replaying: bool) -> list[Output]:
        """Allowed, the call runs; otherwise its result (an error) or the closing rule closes it."""
        return self._call_status(event.get("tool_call_id"), "in_progress") if event.get("outcome") == "allowed" else []

    def _call_status(self, call_id: Any, status: str) -> list[Output]:
        call = self._calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            return []
        return [Update(with_meta({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}, call.meta))]

    def _usage_update(self, total: dict[str, Any]) -> list[Output]:
        """The root's usage after a model call: ``used`` is that call's context (its prompt,
        cached or not, and its answer), the difference from the previous total."""
        previous, self._usage = self._usage, {k: v for k, v in total.items() if isinstance(v, int)}
        if self.context_window is None:
            return []
        used = sum(self._usage.get(k, 0) - previous.get(k, 0) for k in ("input_tokens", "cache_read_tokens", "output_tokens"))
        update = {"sessionUpdate": "usage_update", "used": max(used, 0), "size": self.context_window,
                  "_meta": {"taskwire": {"usage": self._usage}}}
        return [Update(update)]


def _looks_like_agent_call(event: dict[str, Any]) -> bool:
    """A peer's sub-agent call, by its input (``subagent_type``) or claude-agent-acp's first,
    generic announcement of one (``Task``, kind ``think``)."""
    raw = event.get("raw_input")
    if isinstance(raw, dict) and "subagent_type" in raw:
        return True
    return event.get("title") == "Task" and event.get("tool_kind") == "think"


