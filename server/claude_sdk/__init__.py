"""Claude Code through the ``claude-agent-sdk`` package.

``dispatch.py`` is the Sans-I/O core: SDK messages in, lane-partitioned actions out.
``session.py`` (the real CLI) and ``replay.py`` (a recorded transcript) are its two message
sources; ``server/runtime/backends/claude_sdk.py`` drives them for a conversation.
"""

from .actions import ROOT, Action, CountUsage, Emit, Lane, TurnEnded
from .dispatch import ClaudeDispatcher

__all__ = ["ROOT", "Action", "ClaudeDispatcher", "CountUsage", "Emit", "Lane", "TurnEnded"]
