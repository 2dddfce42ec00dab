"""Whether and how the plugin goes into the agent-server that imports it.

``OH_FORWARD_SUBAGENT_EVENTS`` unset or false: nothing at all (the server is as without the
plugin). True: on the tested OpenHands release with everything in ``contract.py`` where it was,
forwarding is installed; otherwise the server runs as without the plugin and its log says why,
once.
"""

from __future__ import annotations

import logging
import os

from . import __version__

logger = logging.getLogger("taskwire_openhands")
FLAG = "OH_FORWARD_SUBAGENT_EVENTS"
TRUE = {"1", "true", "t", "yes", "y", "on"}
FALSE = {"", "0", "false", "f", "no", "n", "off"}
_loaded = False


def forwarding_requested(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool | str:
    """True, False, or why the flag's value is neither."""
    value = environ.get(FLAG, "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    return f"{FLAG}={environ.get(FLAG)!r} is not true or false"


def load() -> None:
    """Install forwarding if asked for and safe (once per process)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    requested = forwarding_requested()
    if requested is False:
        return
    from .contract import contract_problems, version_problems

    problems = [requested] if isinstance(requested, str) else version_problems() or contract_problems()
    if problems:
        logger.warning("taskwire-openhands %s: sub-agent forwarding is off: %s", __version__, "; ".join(problems))
        return
    from .server import install_into_agent_server

    install_into_agent_server()
    logger.info("taskwire-openhands %s: sub-agent events are forwarded to each conversation's subscribers", __version__)
