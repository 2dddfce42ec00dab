"""AguiProjection: taskwire's stored records as AG-UI 1.0 events, without I/O.

One projection per SSE stream. Feed it the wire JSON of the records an ``EventStream`` sends
(in ``seq`` order, ephemeral deltas among them) with ``receive``; it answers ``(id, event)``
frames. It owns the AG-UI side of the stream: runs, open messages and tool calls, announced
sub-agents, usage. The table in ``docs/agui.md`` is the mapping, kind by kind.

- Runs. AG-UI events live inside runs (``RUN_STARTED`` ... ``RUN_FINISHED`` / ``RUN_ERROR``).
  A record that arrives while no run is open opens one; the root conversation's ``status``
  leaving ``running`` ends it: ``finished`` (and ``idle``) -> ``RUN_FINISHED``,
  ``paused`` (paused or interrupted) -> ``RUN_FINISHED`` with outcome ``cancelled``,
  ``error`` -> ``RUN_ERROR``. Before a run ends, whatever it left open is closed, since AG-UI
  requires it. A tree that starts waiting for a person (the root's ``pending_permissions``
  names a request) ends the run too: ``RUN_FINISHED`` with the interrupt outcome
  (``server/agui/interrupts.py``), while the taskwire run beneath goes on.
- Ids. An SSE event's ``id`` is the ``seq`` the stream is complete through: the events made
  from one record carry the previous record's ``seq``, and the last of them the record's own
  (also in its ``metadata.taskwire.seq``, since AG-UI client libraries drop SSE ids). A client
  that resumes with ``Last-Event-ID`` therefore never misses the rest of a record cut off
  mid-way, and gets every record after it once.
- Attribution. Every event of a sub-agent's stream carries ``subagentRunId`` = its
  ``subagent_id``; the root's carry none. With ``OH_FORWARD_SUBAGENT_EVENTS`` off the stream
  holds only the root's records, so nothing is attributed and no sub-agent is announced.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping

from .interrupts import interrupt
from .lanes import Events, Lane, tool_result
from .peer_calls import PeerCalls
from .run_usage import run_cost, run_usage
from .subagents import SubagentInfo, SubagentTracker

Frame = tuple[int, dict[str, Any]]
"""An SSE event: its ``id`` and the AG-UI event."""

RUN_ENDING = frozenset({"idle", "finished", "paused", "error"})
"""Root statuses that end a run (``idle`` only ever comes first, at creation)."""
_RETRY_FIELDS = (("attempt", "attempt"), ("max_attempts", "maxAttempts"), ("delay", "delay"), ("reason", "reason"),
                 ("error", "error"), ("status_code", "statusCode"))


class AguiProjection:
    """The AG-UI events of one stream of one conversation tree."""

    def __init__(
        self,
        thread_id: str,
        *,
        after_seq: int = 0,
        subagents: Iterable[SubagentInfo] = (),
        root_usage: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        sent_message: str | None = None,
        answering: Iterable[str] = (),
    ) -> None:
        """
        ``after_seq``: the stream starts after this ``seq`` (the first ids carry it).
        ``subagents``: the tree as stored, to restate sub-agents started before ``after_seq``.
        ``root_usage``: the root's usage as of ``after_seq``. A run's usage is counted from
        the root's usage when its status turns ``running``; a run without that start in the
        stream (joined midway), or a stream without ``root_usage``, leaves
        ``RUN_FINISHED.usage`` out rather than guess.
        ``run_id``: the id of the first run the stream opens (later ones are named by the id
        of the event that opened them).
        ``sent_message``: the user message this stream's run sent (``POST /agui``): it is not
        echoed back (the client has it), and the run ends only after it.
        ``answering``: request ids this stream's run answers (its input's ``resume``): never
        raised as interrupts again.
        """
        self.thread_id = thread_id
        self._cursor = after_seq
        self._subagents = SubagentTracker({s.subagent_id: s for s in subagents})
        self._root_usage: dict[str, Any] | None = dict(root_usage) if root_usage is not None else None
        self._next_run_id = run_id
        self._sent_message = sent_message
        self._lanes: dict[str | None, Lane] = {}
        self._peer_calls = PeerCalls()
        self._answering = frozenset(answering)
        self._requests: dict[str, dict[str, Any]] = {}
        """Permission requests seen and not resolved, by ``request_id``: what an interrupt offers."""
        # The current run.
        self._run_id: str | None = None
        self._run_base: dict[str, Any] | None = None
        self._run_subagent_usage: dict[str, dict[str, Any]] = {}
        self._result: str | None = None
        self._error: tuple[str, str | None] | None = None
        self.runs_ended = 0
        """How many runs this stream has ended."""
        self._handlers: dict[str, Callable[[dict[str, Any], Events], None]] = {
            "MessageEvent": self._message,
            "StreamingDeltaEvent": self._delta,
            "ActionEvent": self._action,
            "ObservationEvent": self._observation,
            "AgentErrorEvent": self._agent_error,
            "LLMRetryEvent": self._llm_retry,
            "ConversationStateUpdateEvent": self._state,
            "SubagentStartedEvent": self._subagent_started,
            "SubagentFinishedEvent": self._subagent_finished,
            "ACPToolCallEvent": self._acp_tool_call,
            "PermissionRequestEvent": self._permission,
            "PermissionResolvedEvent": self._permission,
        }

    # -- what the endpoint reads and feeds ---------------------------------------------------

    @property
    def run_open(self) -> bool:
        return self._run_id is not None

    @property
    def cursor(self) -> int:
        """The ``seq`` the frames produced so far are complete through (the last id)."""
        return self._cursor

    def start_run(self, run_id: str, parent_run_id: str | None = None) -> list[Frame]:
        """Open the run a client asked for (``POST /agui``) before any record arrives."""
        out: Events = []
        self._open_run(run_id, out)
        if parent_run_id:
            out[-1]["parentRunId"] = parent_run_id
        return [(self._cursor, event) for event in out]

    def receive(self, wire: str) -> list[Frame]:
        """One record's wire JSON (or an ephemeral delta's): the frames to send for it."""
        event = json.loads(wire)
        out: Events = []
        if self._run_id is None:
            self._open_run(event.get("id", ""), out)
        self._handlers.get(event.get("kind", ""), self._other)(event, out)
        return self._number(out, event.get("seq"), event.get("timestamp"))

    def end_at_once(self, waiting: list[dict[str, Any]]) -> list[Frame]:
        """End the open run now: a resume that answered nothing (it only abandoned interrupts
        that had ended) changes nothing a record would report. With requests still ``waiting``
        (as ``GET .../permissions`` lists them) it ends with the interrupt outcome, else as a
        success."""
        if self._run_id is None:
            return []
        out: Events = []
        if waiting:
            self._end_run("interrupt", out, [interrupt(request, request) for request in waiting])
        else:
            self._end_run("finished", out)
        return [(self._cursor, event) for event in out]

    def stream_closed(self, code: str, reason: str) -> list[Frame]:
        """The stream ends early (the client fell a queue behind): say so and where to resume."""
        if self._run_id is None:
            return []
        value = {"code": code, "reason": reason, "lastEventId": self._cursor}
        return [(self._cursor, {"type": "CUSTOM", "name": "taskwire.stream_closed", "value": value})]

    # -- numbering ------------------------------------------------------------------------

    def _number(self, events: Events, seq: int | None, timestamp: str | None) -> list[Frame]:
        if timestamp:
            ms = _epoch_ms(timestamp)
            for event in events:
                event["timestamp"] = ms
        previous = self._cursor
        if seq is None or seq <= previous:
            return [(previous, event) for event in events]
        self._cursor = seq
        frames = [(previous, event) for event in events]
        if frames:
            last = events[-1]
            # The resume point again, where AG-UI clients can read it (they drop SSE ids).
            last.setdefault("metadata", {}).setdefault("taskwire", {})["seq"] = seq
            frames[-1] = (seq, last)
        return frames

    # -- runs -----------------------------------------------------------------------------

    def _open_run(self, default_id: str, out: Events) -> None:
        run_id, self._next_run_id = self._next_run_id or default_id, None
        self._run_id = run_id
        self._run_base = None  # set when the root starts running: a run joined midway has none
        self._run_subagent_usage = {}
        self._result = self._error = None
        out.append({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": run_id})

    def _end_run(self, status: str, out: Events, interrupts: list[dict[str, Any]] | None = None) -> None:
        for lane in self._lanes.values():
            lane.close(out)
        self._peer_calls.close_run(out)
        suspended: dict[str, list[str]] | None = None
        if interrupts is not None:
            suspended = {}
            for raised in interrupts:
                if raised.get("subagentRunId"):
                    suspended.setdefault(raised["subagentRunId"], []).append(raised["id"])
        self._subagents.close_run(out, suspended)
        usage = run_usage(self._run_base, self._root_usage, self._run_subagent_usage.values())
        if interrupts is not None:
            end: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self._run_id,
                                   "outcome": {"type": "interrupt", "interrupts": interrupts}}
        elif status == "error":
            message, code = self._error or ("the run failed", None)
            end: dict[str, Any] = {"type": "RUN_ERROR", "message": message}
            if code:
                end["code"] = code
        else:
            outcome = "cancelled" if status == "paused" else "success"
            end = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self._run_id, "outcome": {"type": outcome}}
            if outcome == "success" and self._result is not None:
                end["result"] = self._result
        if usage is not None:
            end["usage"] = [usage]
            cost = run_cost(self._run_base, self._root_usage, self._run_subagent_usage.values())
            if cost is not None:
                end["metadata"] = {"taskwire": cost}
        out.append(end)
        self._run_id = None
        self._lanes = {}
        self.runs_ended += 1

    # -- lanes ----------------------------------------------------------------------------

    def _lane(self, event: Mapping[str, Any], out: Events) -> Lane:
        """The lane of ``event``, its sub-agent announced in this run first."""
        subagent_id = event.get("subagent_id")
        if subagent_id is not None:
            self._subagents.ensure(subagent_id, out)
        lane = self._lanes.get(subagent_id)
        if lane is None:
            lane = self._lanes[subagent_id] = Lane(subagent_id)
        return lane

    # -- the mapping, kind by kind --------------------------------------------------------

    def _message(self, event: dict[str, Any], out: Events) -> None:
        role = event.get("role", "assistant")
        content = event.get("content", "")
        root = event.get("subagent_id") is None
        if root and role == "user" and self._sent_message is not None and content == self._sent_message:
            self._sent_message = None  # the client's own message: it has it already
            return
        lane = self._lane(event, out)
        if role == "assistant":
            if root:
                self._result = content
            lane.complete_text(event["id"], content, out)
            return
        lane.close(out)
        lane.whole_text(event["id"], role, content, out)

    def _delta(self, event: dict[str, Any], out: Events) -> None:
        text = event.get("content")
        if not text:
            return
        lane = self._lane(event, out)
        if event.get("channel") == "thought":
            lane.add_reasoning(event["id"], text, out)
        else:
            lane.add_text(event["id"], text, out)

    def _action(self, event: dict[str, Any], out: Events) -> None:
        lane = self._lane(event, out)
        response, thought = event.get("llm_response_id"), event.get("thought")
        parent = lane.response_message if response is not None and response == lane.response_id else None
        if thought or lane.text_id is not None:
            parent = lane.complete_text(event["id"], thought or "", out)
            lane.response_id, lane.response_message = response, parent
        else:
            lane.close_reasoning(out)
        call_id, arguments = event["tool_call_id"], event.get("arguments") or {}
        start = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": event["tool_name"], **lane.tag}
        if parent is not None:
            start["parentMessageId"] = parent
        out.append(start)
        out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": json.dumps(arguments), **lane.tag})
        out.append({"type": "TOOL_CALL_END", "toolCallId": call_id, **lane.tag})
        if event.get("subagent_id") is None and event["tool_name"] == "finish" and isinstance(arguments.get("message"), str):
            self._result = arguments["message"]

    def _observation(self, event: dict[str, Any], out: Events) -> None:
        lane = self._lane(event, out)
        lane.close_reasoning(out)
        taskwire = {"status": event.get("status") or ("failed" if event.get("is_error") else "completed")}
        if event.get("is_error"):
            taskwire["is_error"] = True
        out.append(tool_result(event["id"], event["tool_call_id"], event.get("content", ""), lane, taskwire))

    def _agent_error(self, event: dict[str, Any], out: Events) -> None:
        lane = self._lane(event, out)
        lane.close(out)
        value = {"error": event.get("error", "")}
        for key, name in (("code", "code"), ("tool_call_id", "toolCallId")):
            if event.get(key):
                value[name] = event[key]
        out.append({"type": "CUSTOM", "name": "taskwire.agent_error", "value": value, **lane.tag})
        if event.get("subagent_id") is None:
            self._error = (value["error"] or "the agent failed", event.get("code"))

    def _llm_retry(self, event: dict[str, Any], out: Events) -> None:
        """``CUSTOM taskwire.llm_retry``; text the failed attempt streamed is ended, and named
        in ``discardMessageId`` for the client to drop (the retry streams a new message)."""
        lane = self._lane(event, out)
        value = {name: event[key] for key, name in _RETRY_FIELDS if event.get(key) is not None}
        if event.get("discard_text"):
            lane.close_reasoning(out)
            discarded = lane.close_text(out)
            lane.streamed = []
            if discarded is not None:
                value["discardMessageId"] = discarded
        out.append({"type": "CUSTOM", "name": "taskwire.llm_retry", "value": value, **lane.tag})

    def _state(self, event: dict[str, Any], out: Events) -> None:
        lane = self._lane(event, out)
        key, value = event.get("key", ""), event.get("value")
        subagent_id = event.get("subagent_id")
        if key == "usage" and isinstance(value, dict):
            if subagent_id is None:
                self._root_usage = value
            else:
                self._run_subagent_usage[subagent_id] = value
        out.append({"type": "CUSTOM", "name": f"taskwire.{key}", "value": value, **lane.tag})
        if key == "pending_permissions" and subagent_id is None:
            self._interrupt(value, out)
        if key != "status" or subagent_id is not None:
            return
        if value == "running" and self._root_usage is not None:
            self._run_base = dict(self._root_usage)
        if value in RUN_ENDING and self._sent_message is None:
            self._end_run(value, out)

    def _subagent_started(self, event: dict[str, Any], out: Events) -> None:
        self._subagents.start(SubagentInfo.from_started(event), out)

    def _subagent_finished(self, event: dict[str, Any], out: Events) -> None:
        lane = self._lane(event, out)
        lane.close(out)
        subagent_id, status = event["subagent_id"], event.get("status", "completed")
        extra: dict[str, Any] = {}
        usage = event.get("usage")
        if isinstance(usage, dict):
            self._run_subagent_usage[subagent_id] = usage
            extra["usage"] = usage
        self._subagents.finish(subagent_id, status, event.get("result", ""), out, extra)

    def _acp_tool_call(self, event: dict[str, Any], out: Events) -> None:
        self._peer_calls.receive(event, self._lane(event, out), out)

    def _permission(self, event: dict[str, Any], out: Events) -> None:
        """A request or its answer: passed on as ``RAW``; the interrupt comes with the pending set."""
        if event.get("kind") == "PermissionRequestEvent":
            self._requests[event.get("request_id", "")] = event
        else:
            self._requests.pop(event.get("request_id", ""), None)
        self._other(event, out)

    def _interrupt(self, pending: Any, out: Events) -> None:
        """The tree's waiting set changed: a request this run does not answer ends the run."""
        if self._run_id is None or self._sent_message is not None or not isinstance(pending, list):
            return
        waiting = [e for e in pending if isinstance(e, dict) and isinstance(e.get("request_id"), str)
                   and e["request_id"] not in self._answering]
        if waiting:
            self._end_run("interrupt", out, [interrupt(e, self._requests.get(e["request_id"])) for e in waiting])

    def _other(self, event: dict[str, Any], out: Events) -> None:
        """A kind this projection does not know (a newer server's): passed on untranslated."""
        lane = self._lane(event, out)
        out.append({"type": "RAW", "event": event, "source": "taskwire", **lane.tag})


def _epoch_ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
