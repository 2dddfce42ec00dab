"""taskwire-openhands: live, stamped sub-agent events on the OpenHands agent-server.

Loaded into the agent-server by

    OH_FORWARD_SUBAGENT_EVENTS=true agent-server --import-modules taskwire_openhands

(docs/openhands-agent-server.md). ``taskwire_openhands.stamping`` is the stamping of OpenHands'
sub-agent events on its own (openhands-sdk and -tools only), which taskwire's OpenHands backend
uses too.
"""

__version__ = "0.1.0"


def _in_agent_server() -> bool:
    """Whether the agent-server is what imports us (``agent-server`` or ``python -m
    openhands.agent_server``), not a client or taskwire's driver that uses ``stamping``."""
    import sys

    main = sys.modules.get("__main__")
    return ("openhands.agent_server.__main__" in sys.modules
            or getattr(getattr(main, "__spec__", None), "name", None) == "openhands.agent_server.__main__")


if _in_agent_server():
    from .load import load

    load()
