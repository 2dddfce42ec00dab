"""The ACP bridge: external agents over the Agent Client Protocol (e.g. Claude Code).

- ``toolcalls``: one peer tool call's merged state, read from raw ``session/update`` payloads
- ``mapping``: the Sans-I/O translator from ``session/update`` payloads to taskwire events and
  sub-agent lifecycle actions (attribution lives here)
- ``client``: the agent subprocess and the ``agent-client-protocol`` connection to it

``server/runtime/backends/acp.py`` drives them for one conversation.
"""
