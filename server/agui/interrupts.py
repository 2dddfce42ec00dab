"""Permission requests as AG-UI interrupts, and ``resume`` entries as their answers, without I/O.

An AG-UI run cannot wait mid-stream for its consumer (the protocol has no channel back), so a
run whose tree starts waiting for a person *ends*: ``RUN_FINISHED`` with the interrupt outcome,
one ``Interrupt`` per waiting request (``id`` = the taskwire ``request_id``, ``toolCallId`` =
the waiting call, ``subagentRunId`` = the sub-agent that asks). The taskwire run beneath goes
on: its other calls and sub-agents keep working, and the request waits for an answer from any
surface. The next ``RunAgentInput`` answers with ``resume``: ``answer_of`` maps each entry
onto a ``PermissionAnswer`` body.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from ..errors import InvalidBody
from ..permissions.answers import PermissionAnswer

REASON = "tool_approval"
"""``Interrupt.reason``: a tool call waits for a person's approval."""
ABANDONED = "the AG-UI client abandoned the interrupt"
"""The reason recorded for a ``cancelled`` resume entry (it rejects the call)."""


def interrupt(entry: Mapping[str, Any], request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``Interrupt`` for one entry of ``pending_permissions`` (``request``: its
    ``PermissionRequestEvent``'s wire JSON, when the stream carried it)."""
    title, tool = entry.get("title") or entry.get("tool_name") or "a tool", entry.get("tool_name") or "a tool"
    who = f"Sub-agent {entry['subagent_id']}" if entry.get("subagent_id") else "The agent"
    found: dict[str, Any] = {
        "id": entry["request_id"],
        "reason": REASON,
        "message": f"{who} asks to run {tool}: {title}",
        "toolCallId": entry.get("tool_call_id"),
    }
    if entry.get("subagent_id"):
        found["subagentRunId"] = entry["subagent_id"]
    options = list(request.get("options") or []) if request is not None else []
    found["responseSchema"] = response_schema(o["option_id"] for o in options if isinstance(o, dict) and "option_id" in o)
    taskwire: dict[str, Any] = {"requestId": entry["request_id"], "toolName": tool, "title": title}
    if entry.get("parent_tool_use_id"):
        taskwire["parentToolUseId"] = entry["parent_tool_use_id"]
    if request is not None:
        taskwire["arguments"] = request.get("arguments") or {}
        taskwire["options"] = options
    found["metadata"] = {"taskwire": taskwire}
    return {key: value for key, value in found.items() if value is not None}


def response_schema(option_ids: Iterable[str]) -> dict[str, Any]:
    """The JSON Schema of a ``resume`` payload: an offered ``optionId`` (or a ``decision``), and a
    ``reason``."""
    ids = list(option_ids)
    option: dict[str, Any] = {"type": "string", **({"enum": ids} if ids else {})}
    return {
        "type": "object",
        "properties": {
            "optionId": option,
            "decision": {"type": "string", "enum": ["allow", "reject"]},
            "always": {"type": "boolean"},
            "reason": {"type": "string"},
        },
        "oneOf": [{"required": ["optionId"]}, {"required": ["decision"]}],
    }


def answer_of(status: str, payload: Any) -> dict[str, Any]:
    """The ``PermissionAnswer`` body for one resume entry. ``resolved``: ``payload`` is
    ``{"optionId"}`` (or ``option_id``), ``{"decision", "always"?}``, either with a ``reason``, or
    an option id as a bare string. ``cancelled``: a rejection, the payload's ``reason`` if any.
    Raises ``InvalidBody`` (422, ``invalid_resume``) naming what is wrong."""
    if status == "cancelled":
        reason = payload.get("reason") if isinstance(payload, dict) else None
        body: dict[str, Any] = {"decision": "reject", "reason": reason if isinstance(reason, str) and reason else ABANDONED}
    elif isinstance(payload, str):
        body = {"option_id": payload}
    elif isinstance(payload, dict):
        body = {("option_id" if key == "optionId" else key): value for key, value in payload.items()}
    else:
        raise InvalidBody("a resolved resume entry's payload is the chosen option: {\"optionId\": ...} "
                          "or {\"decision\": \"allow\"|\"reject\"}", code="invalid_resume")
    try:
        return PermissionAnswer.model_validate(body).model_dump(exclude_none=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise InvalidBody(f"resume payload{': ' + where if where else ''}: {error['msg']}", code="invalid_resume") from None
