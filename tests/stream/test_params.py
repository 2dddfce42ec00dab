"""Socket query parameters: where the replay starts, and what is refused."""

from __future__ import annotations

import pytest

from taskwire.errors import BadRequest
from taskwire.stream.params import StreamParams


@pytest.mark.parametrize(
    "query, log_end, start",
    [
        ({}, 50, 0),  # default: the whole log
        ({"resend_mode": "all"}, 50, 0),
        ({"after_seq": "20"}, 50, 20),  # after_seq alone means since
        ({"resend_mode": "since", "after_seq": "20"}, 50, 20),
        ({"resend_mode": "since"}, 50, 50),  # since, no after_seq: live from now
        ({"after_seq": "1000000000"}, 50, 50),  # past the end: from the end
    ],
)
def test_replay_starts_where_the_client_asks(query: dict[str, str], log_end: int, start: int) -> None:
    assert StreamParams.from_query(query).start_after(log_end) == start


@pytest.mark.parametrize(
    "query, problem",
    [
        ({"after_seq": "x"}, "after_seq"),
        ({"event_schema": "0"}, "event_schema"),
        ({"resend_mode": "everything"}, "resend_mode"),
        ({"resend_mode": "all", "after_seq": "3"}, "contradicts resend_mode=all"),
        ({"subagents": "none", "parent_tool_use_id": "call-1"}, "contradicts subagents=none"),
    ],
)
def test_invalid_parameters_are_a_bad_request_naming_the_problem(query: dict[str, str], problem: str) -> None:
    with pytest.raises(BadRequest, match=problem):
        StreamParams.from_query(query)
