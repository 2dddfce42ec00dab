"""Commands between replicas: how a handler's result or error travels back to the sender.

A reply is ``{"result": ...}`` or ``{"error": {"type", "detail", "code", "status",
"retry_after"?}}``. An error of taskwire's tree comes back as the same class (so a 409 on the
owner is a 409 on the replica the client asked, a 503 keeps its ``Retry-After``); anything
else is the owner's bug, logged there and a 500 here.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import errors
from .base import CommandHandler
from ..errors import TaskwireError

log = logging.getLogger(__name__)


async def run_command(handler: CommandHandler, command: dict[str, Any]) -> dict[str, Any]:
    """Run ``command`` with ``handler``; the reply to send back, never an exception."""
    try:
        return {"result": await handler(command)}
    except TaskwireError as exc:
        error = {"type": type(exc).__name__, "detail": exc.detail, "code": exc.code, "status": exc.status_code}
        if getattr(exc, "retry_after", None) is not None:
            error["retry_after"] = exc.retry_after  # type: ignore[attr-defined]
        return {"error": error}
    except Exception as exc:
        log.exception("command %r failed", command.get("name"))
        return {"error": {"type": "TaskwireError", "detail": f"the owning replica failed: {exc!r}",
                          "code": "internal_error", "status": 500}}


def command_result(reply: dict[str, Any]) -> Any:
    """The result inside ``reply``, or its error raised."""
    error = reply.get("error")
    if error is None:
        return reply.get("result")
    raise _rebuild(error)


def _rebuild(error: dict[str, Any]) -> TaskwireError:
    cls = getattr(errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, TaskwireError)):
        cls = TaskwireError
    # Bypass the subclass's own __init__ (e.g. ConversationRunning(conversation_id)): the
    # detail was already written by the replica that raised it.
    exc = Exception.__new__(cls)
    TaskwireError.__init__(exc, str(error.get("detail", "")), code=str(error.get("code", cls.code)))
    if exc.status_code != error.get("status", exc.status_code):
        exc.status_code = int(error["status"])
    if error.get("retry_after") is not None:
        exc.retry_after = float(error["retry_after"])  # type: ignore[attr-defined]
    return exc
