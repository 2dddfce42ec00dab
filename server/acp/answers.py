"""The client side the ``agent-client-protocol`` package calls: permission requests answered by
policy, or (``ask``) with the answer a person gives."""

from __future__ import annotations

import asyncio
import collections
from typing import Any, Literal

from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse

from .peer_permissions import policy_answer

PermissionPolicy = Literal["allow", "deny", "ask"]


class PermissionClient:
    """The client side the package calls: it answers permission requests by policy, or (``ask``)
    with the answer the backend gives the request's ``Incoming.answer``. Updates are read raw
    from the observer, so ``session_update`` has nothing left to do."""

    def __init__(self, policy: PermissionPolicy, asked: dict[str, collections.deque[asyncio.Future[str | None]]]) -> None:
        self._policy = policy
        self._asked = asked

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        if self._policy == "ask":
            return await self._asked_answer(tool_call)
        chosen = policy_answer(options, allow=self._policy == "allow")
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return _selected(chosen)

    async def _asked_answer(self, tool_call: Any) -> RequestPermissionResponse:
        # The observer queued this request (with its future) before the package called us.
        waiting = self._asked.get(getattr(tool_call, "tool_call_id", None) or "")
        if not waiting:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        answer = waiting.popleft()
        option_id = await asyncio.shield(answer)
        if option_id is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return _selected(option_id)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def _selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))
