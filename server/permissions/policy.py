"""Approval policy: which tool calls of an agent wait for a person.

A policy is written ``never`` (the default: nothing asks, and nothing of human-in-the-loop
appears on any wire), ``always``, or a list of tool names (``[terminal, file_editor]``; a
comma-separated string in ``OH_APPROVAL`` too). A sub-agent's policy is its parent's joined
with its type's own (``Approval.union``): a type can add tools, never take them away, so a type
saying ``never`` under a parent that asks still asks.

``always`` means every tool that acts, so every tool but ``think`` and ``finish`` (they only
talk) and ``task`` (its sub-agent inherits the policy and asks for its own calls). Name ``task``
in a list to approve each delegation as well.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

UNASKED_UNDER_ALWAYS = frozenset({"think", "finish", "task"})
"""Tools ``always`` leaves alone; a list that names one asks for it all the same."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,100}$")


@dataclass(frozen=True, slots=True)
class Approval:
    """Which of an agent's tool calls wait for a person."""

    always: bool = False
    tools: frozenset[str] = frozenset()

    @property
    def never(self) -> bool:
        """True when nothing asks (then the agent behaves as if this feature did not exist)."""
        return not self.always and not self.tools

    def asks(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` waits for a person's answer."""
        return tool_name in self.tools or (self.always and tool_name not in UNASKED_UNDER_ALWAYS)

    def union(self, other: Approval) -> Approval:
        """Both policies at once: a sub-agent's is its parent's joined with its type's own."""
        return Approval(self.always or other.always, self.tools | other.tools)

    def spec(self) -> str | list[str]:
        """The policy as written in an agent spec: ``never``, ``always`` or a sorted list."""
        if self.always and not self.tools:
            return "always"
        if self.never:
            return "never"
        return (["always"] if self.always else []) + sorted(self.tools)


NEVER = Approval()


def parse_approval(value: Any) -> Approval:
    """Read a written policy: ``None``/``never``, ``always``, a list of tool names, a JSON list,
    or a comma-separated string. Raises ``ValueError`` naming what is wrong."""
    if value is None or isinstance(value, Approval):
        return value or NEVER
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"approval {value!r} is not a JSON list: {exc.msg}") from None
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"approval must be 'never', 'always' or a list of tool names, not {value!r}")
    return _from_names(value)


def _from_names(names: Iterable[Any]) -> Approval:
    always, tools = False, set()
    for name in names:
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"approval lists tool names; {name!r} is not one")
        if name == "always":
            always = True
        elif name != "never":
            tools.add(name)
    return Approval(always, frozenset(tools))


def approval_setting(value: Any) -> str | list[str]:
    """Validate a written policy and give it back in its written form (settings, specs)."""
    return parse_approval(value).spec()


def agent_approval(own: Any, server_default: Any, parent: Approval | None) -> Approval:
    """The policy an agent runs under: a sub-agent's is its parent's with its own added (it can
    only ask for more approvals, never fewer); a root's is its own, else the server's."""
    if parent is not None:
        return parent.union(parse_approval(own))
    return parse_approval(own if own is not None else server_default)
