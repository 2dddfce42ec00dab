"""taskwire's exceptions, one tree.

Our exception hierarchy::

    TaskwireError
    ├── NotFound                      404 / close 4004
    │   ├── ConversationNotFound
    │   ├── EventNotFound
    │   ├── SubagentNotFound
    │   └── PermissionNotFound
    ├── Conflict                      409
    │   ├── ConversationRunning
    │   ├── PermissionResolved
    │   ├── SubagentNotRunning
    │   └── SubagentNotSteerable
    ├── BadRequest                    400
    │   ├── InvalidPageId
    │   ├── InvalidWorkspace
    │   ├── InvalidBody               422
    │   └── InvalidPermissionAnswer   422
    ├── Unauthorized                  401 / close 4001
    ├── TooManyRequests               429 / close 4029
    ├── Unavailable                   503
    │   └── StoreUnavailable          the database cannot be written or read now
    ├── BackendError                  becomes an AgentErrorEvent
    │   ├── LLMError
    │   ├── ACPError
    │   └── ClaudeSDKError
    └── ToolError                     becomes an ObservationEvent with is_error

``server/api/errors.py`` alone turns these into HTTP responses ``{"detail", "code"}`` or
WebSocket close frames.
"""

from __future__ import annotations


class TaskwireError(Exception):
    """Base of every error taskwire raises on purpose."""

    status_code: int = 500
    code: str = "internal_error"

    def __init__(self, detail: str, *, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code


class NotFound(TaskwireError):
    status_code = 404
    code = "not_found"


class ConversationNotFound(NotFound):
    code = "conversation_not_found"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id!r} not found")
        self.conversation_id = conversation_id


class EventNotFound(NotFound):
    code = "event_not_found"

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id!r} not found")


class SubagentNotFound(NotFound):
    code = "subagent_not_found"

    def __init__(self, subagent_id: str) -> None:
        super().__init__(f"sub-agent {subagent_id!r} not found in this conversation")


class PermissionNotFound(NotFound):
    code = "permission_not_found"

    def __init__(self, request_id: str) -> None:
        super().__init__(f"permission request {request_id!r} not found in this conversation")


class Conflict(TaskwireError):
    status_code = 409
    code = "conflict"


class ConversationRunning(Conflict):
    code = "conversation_running"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id!r} is already running")


class PermissionResolved(Conflict):
    """The request already has its answer (the first one wins), or ended without one."""

    code = "permission_resolved"


class SubagentNotRunning(Conflict):
    """A message for a sub-agent that has ended (or whose run no longer takes messages)."""

    code = "subagent_not_running"


class SubagentNotSteerable(Conflict):
    """A message for a running sub-agent whose backend cannot take one (the detail says why)."""

    code = "subagent_not_steerable"


class BadRequest(TaskwireError):
    status_code = 400
    code = "bad_request"


class InvalidPageId(BadRequest):
    code = "invalid_page_id"

    def __init__(self, page_id: str) -> None:
        super().__init__(
            f"page_id {page_id!r} is not one this server handed out for this query; "
            "start again without page_id"
        )


class InvalidWorkspace(BadRequest):
    """A workspace outside the workspace roots, or a name no folder can have."""

    code = "invalid_workspace"


class InvalidBody(BadRequest):
    """A request body that does not parse or validate (the REST rule: 422, like FastAPI's)."""

    status_code = 422
    code = "invalid_request"


class InvalidPermissionAnswer(BadRequest):
    """An answer the permission request does not offer (an unknown option, a kind it has no
    option of): 422, like an invalid body."""

    status_code = 422
    code = "invalid_permission_answer"


class Unauthorized(TaskwireError):
    status_code = 401
    code = "unauthorized"


class TooManyRequests(TaskwireError):
    """The server is at a limit; the same request may succeed later."""

    status_code = 429
    code = "too_many_requests"


class Unavailable(TaskwireError):
    status_code = 503
    code = "unavailable"
    retry_after: float | None = None  # also when rebuilt from another replica's reply

    def __init__(self, detail: str, *, code: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(detail, code=code)
        self.retry_after = retry_after
        """Seconds after which the same request may succeed (sent as ``Retry-After``)."""


class StoreUnavailable(Unavailable):
    """The store cannot serve the request now: the disk is full or read-only, the database
    stayed locked past ``OH_STORE_TIMEOUT``, the connection was lost. Nothing was half
    written, and the store reconnects by itself once the cause is gone."""

    code = "store_unavailable"
    reason = ""

    def __init__(self, detail: str) -> None:
        super().__init__(f"the store is unavailable: {detail}", retry_after=1)
        self.reason = detail
        """The cause alone (what ``/ready`` shows)."""


class BackendError(TaskwireError):
    """An agent backend failed; the conversation records an AgentErrorEvent."""

    code = "backend_error"


class LLMError(BackendError):
    code = "llm_error"


class ACPError(BackendError):
    code = "acp_error"


class ClaudeSDKError(BackendError):
    code = "claude_sdk_error"


class OpenHandsError(BackendError):
    """The OpenHands driver failed (it exited, spoke out of protocol, or OpenHands raised)."""

    code = "openhands_error"


class ToolError(TaskwireError):
    """A tool failed in a way the model should see and may recover from."""

    status_code = 400
    code = "tool_error"
