"""taskwire-openhands: live, stamped sub-agent events on the OpenHands agent-server.

Loaded into the agent-server by

    OH_FORWARD_SUBAGENT_EVENTS=true agent-server --import-modules taskwire_openhands

(docs/openhands-agent-server.md). ``taskwire_openhands.stamping`` is the stamping of OpenHands'
sub-agent events on its own (openhands-sdk and -tools only), which taskwire's OpenHands backend
uses too.
"""

__version__ = "0.1.0"
