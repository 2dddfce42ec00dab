"""What an answer to a permission request means, without I/O.

A client answers with the option it picked, ``{"option_id": "..."}``, or with a decision,
``{"decision": "allow" | "reject", "always": false}``, which names the offered option of that
kind (``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``). Either may carry a
``reason``. The REST body, the socket frame and the CLI all go through ``PermissionAnswer``
and ``choose_option``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import InvalidPermissionAnswer
from ..events import PermissionOption
from taskwire_client.events import PermissionOutcome
from ..stream.inbound import Text

MAX_REASON = 4000
"""Characters a reason may hold (it reaches the model that asked)."""

class PermissionAnswer(BaseModel):
    """``POST .../permissions/{request_id}`` and the ``permission`` socket frame's answer."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        strict=True,
        # One of two shapes, as _one_way checks: the document says so, so clients (and
        # schema-driven tests) write only answers that are accepted.
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["option_id"],
                    "properties": {"option_id": {"type": "string"}, "decision": {"type": "null"}, "always": {"const": False}},
                },
                {"required": ["decision"], "properties": {"option_id": {"type": "null"}, "decision": {"type": "string"}}},
            ]
        },
    )

    option_id: Text | None = Field(default=None, min_length=1, max_length=200)
    """An option the request offered, as it named it."""
    decision: Literal["allow", "reject"] | None = None
    """Instead of ``option_id``: the offered option of that kind."""
    always: bool = False
    """With ``decision``: its ``*_always`` option instead of its ``*_once`` one."""
    reason: Text | None = Field(default=None, max_length=MAX_REASON)
    """Why; a rejected call's result tells the model."""

    @model_validator(mode="after")
    def _one_way(self) -> PermissionAnswer:
        if (self.option_id is None) == (self.decision is None):
            raise ValueError("give either option_id or decision")
        if self.always and self.decision is None:
            raise ValueError("always goes with decision, not option_id")
        return self


def choose_option(options: list[PermissionOption], answer: PermissionAnswer) -> PermissionOption:
    """The offered option ``answer`` names; ``InvalidPermissionAnswer`` (422) if none."""
    offered = ", ".join(f"{o.option_id} ({o.kind})" for o in options) or "none"
    if answer.option_id is not None:
        found = next((o for o in options if o.option_id == answer.option_id), None)
        if found is None:
            raise InvalidPermissionAnswer(f"option {answer.option_id!r} was not offered; offered: {offered}")
        return found
    kind = f"{answer.decision}_{'always' if answer.always else 'once'}"
    found = next((o for o in options if o.kind == kind), None)
    if found is None:
        raise InvalidPermissionAnswer(f"this request offers no {kind} option; offered: {offered}")
    return found


def outcome_of(option: PermissionOption) -> PermissionOutcome:
    """``allowed`` for an ``allow_*`` option, ``rejected`` for a ``reject_*`` one."""
    return "allowed" if option.kind.startswith("allow") else "rejected"


def remembered_option(options: list[PermissionOption], decision: Literal["allow", "reject"]) -> PermissionOption | None:
    """The option to answer with when an earlier ``*_always`` answer decides: the same
    ``*_always`` kind if offered, else the ``*_once`` one."""
    for kind in (f"{decision}_always", f"{decision}_once"):
        found = next((o for o in options if o.kind == kind), None)
        if found is not None:
            return found
    return None
