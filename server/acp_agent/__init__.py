"""``taskwire acp``: taskwire's conversations served to editors over the Agent Client Protocol.

- ``base``: what the ACP agent needs of taskwire (``Conversations``), whichever way it runs
- ``embedded``: ``Conversations`` on a runtime this process hosts (the default)
- ``attached``: ``Conversations`` on a running server, over REST and the event socket
- ``session``: one ACP session: its feed through the projection, its prompt turns
- ``agent``: the ``agent-client-protocol`` ``Agent`` (initialize, session/new, load, prompt ...)

The mapping itself is Sans-I/O, in ``server/acp/projection.py``; ``server/cli/acp.py`` is the
command.
"""
