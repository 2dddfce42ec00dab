"""Schemathesis hooks for tests/api/test_openapi.py (loaded through ``SCHEMATHESIS_HOOKS``).

One rule of ``POST /agui`` no JSON schema can say (its ``resume`` answers each interrupt at most
once: a property unique across items) is kept in requests generated to be valid: a repeated
``interruptId`` is dropped from those; invalid ones are left as generated.

Generated agent specs are valid by the document, so the server would start them: an ``acp``
agent runs its ``command``, a ``claude_sdk`` one its ``cli_path``. A fuzzer choosing what runs
on the test machine is not the point; every such spec is pointed at ``true`` instead (it exits
at once, and the run ends ``error``), the rest of the request left as generated.
"""

from __future__ import annotations

import shutil
from typing import Any

import schemathesis

HARMLESS = shutil.which("true") or "/bin/true"


def disarm(agent: Any) -> None:
    """Point the program an agent spec runs at ``true``. Only a value that is valid already is
    replaced (a string, or none at all), so a request generated to be invalid stays invalid."""
    if not isinstance(agent, dict):
        return
    if agent.get("kind") == "acp" and _valid_path(agent.get("command")):
        agent["command"] = HARMLESS  # ``true`` ignores the args
    elif agent.get("kind") == "claude_sdk" and (agent.get("cli_path") is None or _valid_path(agent.get("cli_path"))):
        agent["cli_path"] = HARMLESS


def _valid_path(value: Any) -> bool:
    return isinstance(value, str) and "\x00" not in value  # the document's ``ProcessText``


def once_per_interrupt(body: dict) -> None:
    resume = body.get("resume")
    if isinstance(resume, list) and all(isinstance(e, dict) for e in resume):
        seen: set[Any] = set()
        kept = []
        for entry in resume:
            key = repr(entry.get("interruptId"))
            if key not in seen:
                seen.add(key)
                kept.append(entry)
        body["resume"] = kept


def positive(case: Any) -> bool:
    meta = getattr(case, "meta", None)
    generation = getattr(meta, "generation", None)
    return generation is not None and generation.mode.is_positive


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    body = case.body
    if isinstance(body, dict) and positive(case):
        once_per_interrupt(body)
    if isinstance(body, dict):
        disarm(body.get("agent"))
        props = body.get("forwardedProps")
        if isinstance(props, dict) and isinstance(props.get("taskwire"), dict):
            disarm(props["taskwire"].get("agent"))
    return case
