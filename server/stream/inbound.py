"""Frames a client sends on an event socket, parsed without I/O.

- ``{"type": "message", "content": "...", "run": true}``, or the REST body shape
  ``{"role": "user", "content": "...", "run": true}``: a user message to the conversation;
- ``{"type": "auth", "session_api_key": "..."}``: the first-frame login (ignored later on);
- ``{"type": "permission", "request_id": "...", "option_id": "..."}`` (or ``"decision":
  "allow" | "reject", "always": false``, and an optional ``"reason"``: the body of
  ``POST .../permissions/{request_id}``): an answer to a permission request, which the socket
  answers with ``permission_answer_frame``.

Anything else is a client mistake: ``BadRequest`` with a stable ``code``, which the socket
answers with an error frame (``error_frame``) while it stays open.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..errors import BadRequest, TaskwireError


def _utf8(text: str) -> str:
    # JSON may spell a lone surrogate ("\ud800"); no store, key or client can take one.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("holds a lone surrogate (not valid Unicode text)") from None
    return text


Text = Annotated[str, AfterValidator(_utf8)]
"""A string that is valid Unicode text."""


class InboundMessage(BaseModel):
    """A user message sent over the socket."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["message"] = "message"
    role: Literal["user"] = "user"
    content: Text = Field(min_length=1)
    run: bool = True
    """Start a run unless one is going (it picks the message up)."""


class InboundAuth(BaseModel):
    """A login sent as the first frame."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["auth"]
    session_api_key: Text


class InboundPermission(BaseModel):
    """An answer to a permission request; ``answer`` is the rest of the frame, checked as a
    ``PermissionAnswer`` by the socket (a bad one gets ``status: 422`` with the reason)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["permission"]
    request_id: str = Field(min_length=1, max_length=200)
    answer: dict[str, Any]


InboundFrame = Union[InboundMessage, InboundAuth, InboundPermission]


def parse_inbound(data: str | bytes, *, max_bytes: int) -> InboundFrame:
    """Parse one client frame; raises ``BadRequest`` (codes ``frame_too_large``,
    ``invalid_json``, ``invalid_frame``) for anything this protocol does not accept."""
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    if size > max_bytes:
        raise BadRequest(f"frame of {size} bytes is over the {max_bytes}-byte limit", code="frame_too_large")
    try:
        raw = json.loads(data)
    except RecursionError:
        raise BadRequest("frame is nested too deeply", code="invalid_json") from None
    except ValueError as exc:  # bad JSON, bad UTF-8 in a binary frame, a 5,000-digit number
        raise BadRequest(f"frame is not JSON: {exc}", code="invalid_json") from exc
    if not isinstance(raw, dict):
        raise BadRequest("frame must be a JSON object", code="invalid_frame")
    if raw.get("type") == "permission":
        request_id = raw.get("request_id")
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 200:
            raise BadRequest("request_id: a permission frame names the request it answers", code="invalid_frame")
        answer = {key: value for key, value in raw.items() if key not in ("type", "request_id")}
        return InboundPermission(type="permission", request_id=request_id, answer=answer)
    if raw.get("type") == "auth":
        model: type[BaseModel] = InboundAuth
    elif raw.get("type", "message") == "message":
        model = InboundMessage
    else:
        raise BadRequest(f"unknown frame type {raw.get('type')!r}; send 'message' or 'permission'", code="invalid_frame")
    try:
        return model.model_validate(raw)  # type: ignore[return-value]
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "frame"
        raise BadRequest(f"{where}: {error['msg']}", code="invalid_frame") from exc


def error_frame(error: TaskwireError) -> str:
    """The frame that answers a bad client frame (the socket stays open)."""
    return json.dumps({"type": "error", "code": error.code, "detail": error.detail})


def permission_answer_frame(
    request_id: str, status: int, *, event: dict[str, Any] | None = None, error: TaskwireError | None = None
) -> str:
    """The frame that answers a ``permission`` frame: ``status`` as the REST route would give
    it (200, 404, 409, 422), with the resolved ``event`` on success or ``code`` and ``detail``."""
    frame: dict[str, Any] = {"type": "permission_answer", "request_id": request_id, "status": status}
    if event is not None:
        frame["event"] = event
    if error is not None:
        frame.update(code=error.code, detail=error.detail)
    return json.dumps(frame)
