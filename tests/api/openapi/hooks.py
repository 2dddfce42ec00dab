"""Schemathesis hooks for tests/api/test_openapi.py (loaded through ``SCHEMATHESIS_HOOKS``).

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
    if agent.get("kind") == "acp" and isinstance(agent.get("command"), str):
        agent["command"] = HARMLESS  # ``true`` ignores the args
    elif agent.get("kind") == "claude_sdk" and isinstance(agent.get("cli_path", ""), (str, type(None))):
        agent["cli_path"] = HARMLESS


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    body = case.body
    if isinstance(body, dict):
        disarm(body.get("agent"))
        props = body.get("forwardedProps")
        if isinstance(props, dict) and isinstance(props.get("taskwire"), dict):
            disarm(props["taskwire"].get("agent"))
    return case
