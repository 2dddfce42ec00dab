"""A peer's ``session/request_permission`` read as a taskwire request, and the answer it gets
back (Sans-I/O), from the recorded claude-agent-acp session."""

from __future__ import annotations

import json

from taskwire.acp.mapping import SessionMapper
from taskwire.acp.peer_permissions import asked_permission, offered_options, peer_answer, policy_answer
from tests.acp.test_permissions import RECORDING


def recorded_requests() -> list[dict]:
    return [entry["msg"]["params"] for entry in map(json.loads, RECORDING.read_text().splitlines())
            if entry["msg"].get("method") == "session/request_permission"]


def test_a_subagents_request_is_read_with_its_calls_merged_state() -> None:
    mapper = SessionMapper()
    mapper.begin_turn()
    params = recorded_requests()[1]
    mapper.receive_permission_request(params)
    call = mapper.call("toolu_subagenta_0_0_0012")
    assert call is not None and call.parent == "toolu_main_1_1_0007"
    asked = asked_permission(params, call)
    assert asked is not None
    assert (asked.tool_call_id, asked.tool_name, asked.title) == ("toolu_subagenta_0_0_0012", "Bash", "python3 -c 'print(\"approved-a\")'")
    assert asked.arguments["command"] == "python3 -c 'print(\"approved-a\")'"
    assert [(o.option_id, o.kind) for o in asked.options] == [
        ("allow-once", "allow_once"), ("allow-with-updates", "allow_always"), ("reject", "reject_once")]


def test_the_peer_gets_its_own_option_ids_back() -> None:
    options = offered_options(recorded_requests()[0]["options"])
    assert peer_answer(options, "allowed", "allow-with-updates") == "allow-with-updates"
    assert peer_answer(options, "rejected", "reject") == "reject"
    assert peer_answer(options, "timed_out", None) == "reject"  # its own reject option
    assert peer_answer(options, "cancelled", None) is None  # ACP's cancelled outcome
    assert policy_answer(options, allow=True) == "allow-once"
    assert policy_answer(options, allow=False) == "reject"


def test_a_request_with_no_call_or_no_known_option_is_not_asked() -> None:
    assert asked_permission({"options": [{"optionId": "x", "kind": "allow_once"}]}, None) is None
    assert asked_permission({"toolCall": {"toolCallId": "c1"}, "options": [{"optionId": "x", "kind": "maybe"}]}, None) is None
    asked = asked_permission({"toolCall": {"toolCallId": "c1", "title": "rm"}, "options": [{"optionId": "x", "kind": "allow_once"}]}, None)
    assert asked is not None and (asked.tool_name, asked.arguments) == ("rm", {})
