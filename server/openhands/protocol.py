"""The JSON-lines protocol between taskwire and its OpenHands process (``driver.py``), Sans-I/O.

One process serves every ``kind: openhands`` conversation of a server; each command and each
conversation's report names its ``conversation`` (taskwire's id).

taskwire -> driver (the driver's stdin), one object a line:

- ``{"op": "configure", "conversation", "config": {...}}`` (LLM, tools, sub-agent types,
  workspace): build that conversation's session (again: it goes on from OpenHands' persisted
  history, once its previous run has ended);
- ``{"op": "message", "conversation", "text"}``: a user message; the driver runs the conversation on it;
- ``{"op": "interrupt", "conversation"}``: pause its running sub-agents, then its main agent;
- ``{"op": "answer", "conversation", "request", "allow"}``: a person's answer to a ``confirm``;
- ``{"op": "stop_subagent", "conversation", "tool_call_id"}``: pause one sub-agent;
- ``{"op": "steer", "conversation", "tool_call_id", "text"}``: a person's message to one running
  sub-agent, read by its next model call;
- ``{"op": "close", "conversation"}``: end it here (and every process its tools started);
- ``{"op": "shutdown"}``: end every conversation, then the process (as does stdin closing).

driver -> taskwire (a private duplicate of its fd 1), each with ``v`` (2) and ``seq``:

- ``started`` (``openhands_sdk``: its version, ``pid``), once, the process's;
- ``ready`` / ``fatal`` (``code``, ``error``): a conversation's session was built, or not;
- ``event``: one OpenHands event (``event``: its ``model_dump``), stamped
  ``parent_tool_use_id`` (``None`` for the main agent), ``ancestry`` (spawning call ids, outermost
  first), ``depth``, ``label`` (the task's description) and ``subagent_type``;
- ``llm_call``: one model call of the main agent (``parent_tool_use_id`` ``None``) or of a
  sub-agent, reported before the event it answered with: ``model`` and ``usage`` (its tokens);
- ``task_result``: a ``task`` call (``tool_call_id``) ended, sent the moment its sub-agent ends
  (``status``, ``is_error``, ``text``);
- ``run_end``: the conversation's run returned (``status``: OpenHands' execution status, ``error``);
- ``dropped`` (the process's): ``count`` reports lost because taskwire read too slowly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

VERSION = 2


@dataclass(slots=True)
class Report:
    """One line from the driver."""

    type: str
    seq: int = 0
    data: dict[str, Any] = field(default_factory=dict)


class ProtocolError(ValueError):
    """A line from the driver that is not a protocol message."""


def parse_line(line: bytes | str) -> Report:
    """One driver line as a ``Report``; ``ProtocolError`` if it is not one."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {line[:200]!r}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ProtocolError(f"not a driver message: {line[:200]!r}")
    if data.get("v", VERSION) != VERSION:
        raise ProtocolError(f"driver speaks protocol v{data.get('v')}, taskwire v{VERSION}")
    return Report(type=data["type"], seq=int(data.get("seq") or 0), data=data)


def command(op: str, **fields: Any) -> bytes:
    """One line to the driver."""
    return (json.dumps({"op": op, **fields}) + "\n").encode()
