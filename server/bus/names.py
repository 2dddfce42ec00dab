"""The Redis keys and channels of one taskwire deployment, under one prefix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Names:
    prefix: str = "taskwire"

    def topic(self, root_id: str) -> str:
        """The channel of a conversation tree's events."""
        return f"{self.prefix}:events:{root_id}"

    def root_of(self, channel: str) -> str | None:
        """The root id of a topic channel, ``None`` for another channel."""
        head = f"{self.prefix}:events:"
        return channel[len(head):] if channel.startswith(head) else None

    def last(self, root_id: str) -> str:
        """The key holding a topic's last stored record."""
        return f"{self.prefix}:last:{root_id}"

    def replica(self, replica_id: str) -> str:
        """The channel of one replica's commands and replies."""
        return f"{self.prefix}:replica:{replica_id}"
