"""Sans-I/O: a peer's ``session/request_permission`` as a taskwire permission request, and the
answer a taskwire resolution gives back to the peer.

With ``permissions: "ask"`` the bridge files each request in the agent that asks (the lane the
call's ``_meta.claudeCode.parentToolUseId`` names) and hands the peer exactly one of the
``optionId`` s it offered, or a ``cancelled`` outcome (``None`` here).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, get_args

from .toolcalls import ToolCallState
from ..events import PermissionOption
from taskwire_client.events import PermissionOptionKind

log = logging.getLogger(__name__)

_KINDS = frozenset(get_args(PermissionOptionKind))


@dataclass(frozen=True, slots=True)
class AskedPermission:
    """What taskwire's request says: the call, its tool and input, the peer's options."""

    tool_call_id: str
    tool_name: str
    title: str
    arguments: dict[str, Any]
    options: list[PermissionOption]


def asked_permission(params: dict[str, Any], call: ToolCallState | None) -> AskedPermission | None:
    """The request a ``session/request_permission``'s params make, read with the call's merged
    state (``call``: the mapper's, after it took the request's ``toolCall``); ``None`` when it
    names no call or offers no option taskwire knows (the peer is then answered ``cancelled``)."""
    tool_call = params.get("toolCall")
    call_id = tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
    if not isinstance(call_id, str) or not call_id:
        return None
    options = offered_options(params.get("options"))
    if not options:
        return None
    raw_input = call.raw_input if call is not None else tool_call.get("rawInput")
    title = (call.title if call is not None else None) or tool_call.get("title")
    tool_name = (call.tool_name or call.tool_kind) if call is not None else None
    return AskedPermission(
        tool_call_id=call_id,
        tool_name=tool_name or (title if isinstance(title, str) and title else "tool"),
        title=title if isinstance(title, str) else "",
        arguments=dict(raw_input) if isinstance(raw_input, dict) else {},
        options=options,
    )


def offered_options(raw: Any) -> list[PermissionOption]:
    """The peer's options as it offered them (``optionId`` kept verbatim); an option of a kind
    ACP does not define is left out."""
    options = []
    for option in raw if isinstance(raw, list) else []:
        if not isinstance(option, dict):
            continue
        option_id, kind, name = option.get("optionId"), option.get("kind"), option.get("name")
        if not isinstance(option_id, str) or not option_id or kind not in _KINDS:
            log.info("permission option %r left out: unknown kind or no optionId", option)
            continue
        options.append(PermissionOption(option_id=option_id, kind=kind, name=name if isinstance(name, str) else ""))
    return options


def policy_answer(options: list[Any], allow: bool) -> str | None:
    """The ``optionId`` taskwire answers with by itself (``permissions: allow`` / ``deny``): the
    peer's first allow (or reject) option, once before always; ``None`` (cancelled) if it
    offers none. ``options``: ``PermissionOption`` s of taskwire or of the ``acp`` package."""
    kinds = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in kinds:
        found = next((o for o in options if o.kind == kind), None)
        if found is not None:
            return found.option_id
    return None


def peer_answer(options: list[PermissionOption], outcome: str, option_id: str | None) -> str | None:
    """The ``optionId`` to send the peer for a resolution (``None``: a ``cancelled`` outcome).
    A person's or the policy's choice goes back unchanged; ``timed_out`` picks the peer's own
    reject option; ``cancelled`` is a cancelled outcome, as ACP asks after ``session/cancel``."""
    if outcome in ("allowed", "rejected") and option_id is not None:
        return option_id
    if outcome == "timed_out":
        for kind in ("reject_once", "reject_always"):
            found = next((o for o in options if o.kind == kind), None)
            if found is not None:
                return found.option_id
    return None
