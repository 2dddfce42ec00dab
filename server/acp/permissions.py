"""Sans-I/O: a tree's permission requests as the editor's ``session/request_permission``.

``PermissionDesk`` is the ACP projection's part for them. It reads the root's
``pending_permissions`` state, which the root's stream carries whatever
``OH_FORWARD_SUBAGENT_EVENTS`` says, so the editor is asked for every request of the tree, at
any depth: a request id that joins the set is an ``Ask``, one that leaves it a ``Settled``
(answered here or elsewhere, timed out, cancelled). With forwarding on, the
``PermissionRequestEvent`` comes first and the ask carries all of it; without, the ask holds
what the pending set says and ``needs_details`` (the agent side reads the request's options).

The ask's ``toolCall`` is the waiting call, stamped as the call's own updates are
(``_meta.claudeCode.parentToolUseId``, ``_meta.taskwire.subagentId``) with
``_meta.taskwire.requestId``; its options are the request's, kinds unchanged (taskwire's four
kinds are ACP's). ``answer_body`` turns the editor's answer into a ``PermissionAnswer`` body.
"""

from __future__ import annotations

from typing import Any

from .call_view import native_call
from .updates import Ask, Settled, merge_meta, stamp_meta

OPTION_NAMES = {"allow_once": "Allow", "allow_always": "Always allow", "reject_once": "Reject",
                "reject_always": "Always reject"}
"""A button's label when the request gave its option none."""
EDITOR_CANCELLED = "the editor cancelled the permission request"


def acp_options(options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A request's options (``option_id``, ``kind``, ``name``) as ACP ``PermissionOption``s."""
    return [{"optionId": o["option_id"], "kind": o["kind"], "name": o.get("name") or OPTION_NAMES.get(o["kind"], o["kind"])}
            for o in options if isinstance(o, dict) and "option_id" in o and "kind" in o]


def tool_call(request: dict[str, Any], workspace: str | None = None) -> dict[str, Any]:
    """The ``toolCall`` of the ask for ``request`` (a request event, or a ``pending_permissions``
    entry: both name the call, the tool and the asker's stamp)."""
    name = request.get("tool_name") or ""
    arguments = request.get("arguments") if isinstance(request.get("arguments"), dict) else None
    view = native_call(name, arguments or {}, workspace)
    meta = merge_meta(stamp_meta(request), {"taskwire": {"requestId": request["request_id"], "toolName": name}})
    call: dict[str, Any] = {"toolCallId": request["tool_call_id"], "title": request.get("title") or view.title,
                            "kind": view.kind, "status": "pending", "_meta": meta}
    if arguments is not None:
        call["rawInput"] = arguments
    return call


def answer_body(outcome: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``PermissionAnswer`` body for the editor's ``outcome`` (``{"outcome": "selected",
    "optionId"}`` or ``{"outcome": "cancelled"}``) to an ask offering ``options`` (ACP's): the
    chosen option, or for a cancelled one the first reject option offered, with a reason.
    ``None`` if it offers nothing to reject with."""
    if outcome.get("outcome") == "selected":
        return {"option_id": outcome["optionId"]}
    reject = next((o for o in options if str(o.get("kind", "")).startswith("reject")), None)
    if reject is None:
        return None
    return {"option_id": reject["optionId"], "reason": EDITOR_CANCELLED}


def with_details(ask: Ask, request: dict[str, Any]) -> Ask:
    """``ask`` (``needs_details``) completed from the request as ``GET .../permissions`` lists it."""
    call = tool_call(request)
    call["title"] = ask.tool_call.get("title") or call["title"]
    call["_meta"] = merge_meta(ask.tool_call.get("_meta") or {}, call["_meta"])
    return Ask(ask.request_id, call, acp_options(request.get("options") or []), session_id=ask.session_id)


class PermissionDesk:
    """What one ACP session was asked about; fed by ``ACPProjection``."""

    def __init__(self, workspace: str | None = None) -> None:
        self.workspace = workspace
        self._requests: dict[str, dict[str, Any]] = {}
        """Request events seen and not yet settled, by ``request_id``."""
        self._waiting: set[str] = set()
        """Request ids the last ``pending_permissions`` named."""

    def request(self, event: dict[str, Any]) -> None:
        """A ``PermissionRequestEvent`` (it comes before the pending set that names it)."""
        if isinstance(event.get("request_id"), str) and isinstance(event.get("tool_call_id"), str):
            self._requests[event["request_id"]] = event

    def pending(self, value: Any) -> list[Ask | Settled]:
        """The root's new ``pending_permissions``: an ``Ask`` for each request that joined it,
        a ``Settled`` for each that left."""
        entries = [e for e in value if isinstance(e, dict) and isinstance(e.get("request_id"), str)
                   and isinstance(e.get("tool_call_id"), str)] if isinstance(value, list) else []
        now = {e["request_id"]: e for e in entries}
        out: list[Ask | Settled] = []
        for request_id in self._waiting - now.keys():
            self._requests.pop(request_id, None)
            out.append(Settled(request_id))
        for request_id, entry in now.items():
            if request_id in self._waiting:
                continue
            event = self._requests.get(request_id)
            if event is not None:
                out.append(Ask(request_id, tool_call(event, self.workspace), acp_options(event.get("options") or [])))
            else:
                out.append(Ask(request_id, tool_call(entry, self.workspace), [], needs_details=True))
        self._waiting = set(now)
        return out
