"""Close codes of taskwire's live sockets: one enum, no bare numbers.

Codes sit in the 4000-4999 range the WebSocket protocol leaves to applications; the last
three digits echo the nearest HTTP status so a client can guess the meaning. Once shipped, a
code never changes meaning (``tests/stream/test_close_codes.py`` pins them).
"""

from __future__ import annotations

import enum


class CloseCode(enum.IntEnum):
    """Why the server closed a live event socket."""

    BAD_REQUEST = 4000
    """A query parameter is invalid or contradicts another; the reason names it."""
    UNAUTHORIZED = 4001
    """No valid session API key (header, query or a first ``auth`` frame within
    ``OH_WS_AUTH_TIMEOUT``)."""
    UNKNOWN_CONVERSATION = 4004
    """No conversation with that id."""
    TRY_AGAIN_LATER = 1013
    """The server cannot serve the socket just now (the store is unavailable, or the
    conversation's owner is changing replicas); retry after a moment, from the same ``seq``."""
    TOO_SLOW = 4008
    """The client fell a whole queue behind, or took no data for ``OH_WS_SEND_TIMEOUT``; the
    reason holds ``after_seq=N`` to resume from."""
    TOO_MANY_SUBSCRIBERS = 4029
    """The server already serves ``OH_MAX_SUBSCRIBERS`` live subscribers, or the socket waited
    for its ``auth`` frame while ``OH_MAX_UNAUTHENTICATED_SOCKETS`` newer ones arrived; retry."""
