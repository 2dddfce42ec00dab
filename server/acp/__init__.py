"""The Agent Client Protocol, both sides, Sans-I/O where it can be.

Client side (taskwire drives an external ACP agent, e.g. Claude Code):

- ``toolcalls``: one peer tool call's merged state, read from raw ``session/update`` payloads
- ``mapping``: the Sans-I/O translator from ``session/update`` payloads to taskwire events and
  sub-agent lifecycle actions (attribution lives here)
- ``child_sessions``: the subagents RFD's child sessions folded back into the one-session form
  (Sans-I/O, in front of ``mapping``), with each child's work state
- ``client``: the agent subprocess and the ``agent-client-protocol`` connection to it;
  ``answers`` (permission requests answered for the package) and ``incoming`` (its queue)

``server/runtime/backends/acp.py`` drives them for one conversation.

Agent side (``taskwire acp`` serves taskwire conversations to editors):

- ``projection``: the Sans-I/O projection of taskwire events onto ``session/update`` payloads
- ``call_view``: how a taskwire tool call looks to an ACP client (title, kind, content)
- ``updates``: what the projection hands out, and the ``_meta`` stamp of sub-agent updates

``server/acp_agent/`` drives the projection, embedded or attached to a server.
"""
