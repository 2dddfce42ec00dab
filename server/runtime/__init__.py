"""The runtime: conversations, agent backends, tools, sub-agents and forwarding.

Where forwarding happens: ``runtime/forwarding.py`` (stamping and the forwarding callback),
called from ``ConversationHost.emit`` in ``runtime/conversation.py``.
"""

from .manager import Runtime

__all__ = ["Runtime"]
