"""Close codes are part of the wire contract: once shipped, never renumbered."""

from __future__ import annotations

from taskwire.stream import CloseCode


def test_close_codes_are_pinned() -> None:
    assert {code.name: code.value for code in CloseCode} == {
        "BAD_REQUEST": 4000,
        "UNAUTHORIZED": 4001,
        "UNKNOWN_CONVERSATION": 4004,
        "TRY_AGAIN_LATER": 1013,
        "TOO_SLOW": 4008,
        "TOO_MANY_SUBSCRIBERS": 4029,
    }
