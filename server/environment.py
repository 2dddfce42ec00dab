"""The environment of the processes taskwire starts: no ``OH_*`` setting ever reaches one.

Settings hold the session keys, the LLM key, database passwords. A tool runs what the model
asks for (``env`` prints everything it inherits into the conversation), and a peer agent is
someone else's program. So:

- tools get only the variables the operator allows (``OH_TOOL_ENV_ALLOW``), ``OH_*`` never;
- peer agents (ACP, Claude Code) get the server's environment without ``OH_*``, and their
  spec's ``env`` over it (``ANTHROPIC_BASE_URL`` and the like);
- ``taskwire serve`` drops ``OH_*`` from its own environment once its settings are read, so a
  library that starts a process from the whole environment has none to pass on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

SETTINGS_PREFIX = "OH_"


def is_setting(name: str) -> bool:
    return name.upper().startswith(SETTINGS_PREFIX)


def tool_environment(allow: Iterable[str]) -> dict[str, str]:
    """A tool's environment: the allowed variables of the server's, never an ``OH_*`` one."""
    return {name: os.environ[name] for name in allow if name in os.environ and not is_setting(name)}


def peer_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """A peer agent's environment: the server's without ``OH_*``, ``extra`` over it."""
    return {**{k: v for k, v in os.environ.items() if not is_setting(k)}, **extra}


def blanked_settings(extra: Mapping[str, str]) -> dict[str, str]:
    """For a library that starts its process from the whole environment and only lets us add
    to it (the Claude Agent SDK): every ``OH_*`` still in it set empty, ``extra`` over them."""
    return {**{k: "" for k in os.environ if is_setting(k)}, **extra}


def drop_settings() -> None:
    """Remove every ``OH_*`` variable from this process's environment (once settings are read)."""
    for name in [k for k in os.environ if is_setting(k)]:
        del os.environ[name]
