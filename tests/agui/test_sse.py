"""SSE framing and ``Last-Event-ID`` parsing, without I/O."""

from __future__ import annotations

import pytest

from taskwire.agui import encode_frames, parse_last_event_id
from taskwire.errors import BadRequest


def test_each_event_is_an_id_line_and_one_data_line() -> None:
    frames = [(3, {"type": "CUSTOM", "name": "x", "value": "two\nlines é"}), (4, {"type": "RUN_STARTED"})]
    assert encode_frames(frames) == (
        'id: 3\ndata: {"type":"CUSTOM","name":"x","value":"two\\nlines é"}\n\n'
        'id: 4\ndata: {"type":"RUN_STARTED"}\n\n'
    ).encode()


def test_last_event_id_is_a_seq() -> None:
    assert parse_last_event_id(None) is None
    assert parse_last_event_id(" ") is None
    assert parse_last_event_id("42") == 42


@pytest.mark.parametrize("value", ["-1", "abc", "1.5", "9" * 30])
def test_an_id_this_server_never_sent_is_a_clear_400(value: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_last_event_id(value)
    assert caught.value.code == "invalid_last_event_id"
