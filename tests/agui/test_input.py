"""``RunAgentInput`` as taskwire reads it, without I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskwire.agui import RunAgentInput
from taskwire.errors import BadRequest, InvalidBody


def body(**fields: Any) -> bytes:
    base: dict[str, Any] = {"threadId": "t-1", "runId": "r-1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not None}).encode()


def test_the_newest_user_message_is_what_the_run_sends() -> None:
    messages = [
        {"id": "1", "role": "user", "content": "first"},
        {"id": "2", "role": "assistant", "content": "ok", "toolCalls": []},
        {"id": "3", "role": "user", "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "part"}]},
        {"id": "4", "role": "activity", "activityType": "x", "content": {"n": 1}},
    ]
    run_input = RunAgentInput.parse(body(messages=messages, tools=[{"name": "t", "description": "d"}], state={"a": 1}))
    assert run_input.newest_user_text() == "second\npart"
    assert (run_input.thread_id, run_input.run_id, run_input.agent()) == ("t-1", "r-1", None)


def test_the_agent_of_a_new_thread_comes_from_forwarded_props() -> None:
    props = {"taskwire": {"agent": {"kind": "native", "llm": {"api": "scripted", "script": "x.yaml"}}}}
    assert RunAgentInput.parse(body(forwardedProps=props)).agent() == {
        "kind": "native", "llm": {"api": "scripted", "script": "x.yaml"}, "max_iterations": 50,
    }


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"not json", "invalid_run_agent_input"),
        (body(threadId=None), "invalid_run_agent_input"),
        (body(messages=[{"id": "m", "role": "robot", "content": "x"}]), "invalid_run_agent_input"),
        (body(threadId="../etc"), "invalid_run_agent_input"),
        (body(threadId=".hidden"), "invalid_run_agent_input"),
    ],
)
def test_malformed_input_is_a_422_naming_the_problem(raw: bytes, code: str) -> None:
    with pytest.raises(InvalidBody) as caught:
        RunAgentInput.parse(raw)
    assert (caught.value.status_code, caught.value.code) == (422, code)


def test_a_bad_agent_is_a_422_that_points_at_it() -> None:
    run_input = RunAgentInput.parse(body(forwardedProps={"taskwire": {"agent": {"kind": "robot"}}}))
    with pytest.raises(InvalidBody) as caught:
        run_input.agent()
    assert caught.value.code == "invalid_agent" and "forwardedProps.taskwire.agent" in caught.value.detail


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (body(protocolVersion="2.0"), "unsupported_protocol_version"),
    ],
)
def test_input_taskwire_cannot_run_is_a_400(raw: bytes, code: str) -> None:
    with pytest.raises(BadRequest) as caught:
        RunAgentInput.parse(raw)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("messages", "code"),
    [
        ([{"id": "a", "role": "assistant", "content": "only me"}], "no_user_message"),
        ([{"id": "u", "role": "user", "content": "   "}], "empty_user_message"),
        ([{"id": "u", "role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "x"}}]}], "empty_user_message"),
    ],
)
def test_a_run_needs_a_user_message_with_text(messages: list[dict[str, Any]], code: str) -> None:
    run_input = RunAgentInput.parse(body(messages=messages))
    with pytest.raises(BadRequest) as caught:
        run_input.newest_user_text()
    assert caught.value.code == code


def test_resume_entries_are_permission_answers() -> None:
    entries = [
        {"interruptId": "r1", "status": "resolved", "payload": {"optionId": "allow_once"}},
        {"interruptId": "r2", "status": "resolved", "payload": {"decision": "reject", "reason": "no"}},
        {"interruptId": "r3", "status": "resolved", "payload": "allow_always"},
        {"interruptId": "r4", "status": "cancelled"},
    ]
    assert RunAgentInput.parse(body(resume=entries)).resume_answers() == [
        ("r1", {"option_id": "allow_once", "always": False}),
        ("r2", {"decision": "reject", "always": False, "reason": "no"}),
        ("r3", {"option_id": "allow_always", "always": False}),
        ("r4", {"decision": "reject", "always": False, "reason": "the AG-UI client abandoned the interrupt"}),
    ]


@pytest.mark.parametrize(
    "entries",
    [
        [{"interruptId": "r1", "status": "resolved"}],
        [{"interruptId": "r1", "status": "resolved", "payload": 3}],
        [{"interruptId": "r1", "status": "resolved", "payload": {"decision": "maybe"}}],
        [{"interruptId": "r1", "status": "resolved", "payload": {"optionId": "a", "decision": "allow"}}],
        [{"interruptId": "r1", "status": "cancelled"}, {"interruptId": "r1", "status": "cancelled"}],
    ],
)
def test_a_resume_that_answers_nothing_clearly_is_a_422(entries: list[dict[str, Any]]) -> None:
    run_input = RunAgentInput.parse(body(resume=entries))
    with pytest.raises(InvalidBody) as caught:
        run_input.resume_answers()
    assert caught.value.code == "invalid_resume"
