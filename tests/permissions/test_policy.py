"""The approval policy and what answers mean, without I/O."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from taskwire.errors import InvalidPermissionAnswer
from taskwire.events import PermissionOption, PermissionRequestEvent, PermissionResolvedEvent
from taskwire.permissions.answers import PermissionAnswer, choose_option, outcome_of
from taskwire.permissions.ledger import PermissionLedger
from taskwire.permissions.policy import NEVER, Approval, parse_approval
from taskwire.permissions.requests import NATIVE_OPTIONS, request_title
from taskwire.settings import Settings


@pytest.mark.parametrize(("written", "policy"), [
    (None, NEVER),
    ("never", NEVER),
    ([], NEVER),
    ("always", Approval(always=True)),
    (["terminal", "file_editor"], Approval(tools=frozenset({"terminal", "file_editor"}))),
    ("terminal, file_editor", Approval(tools=frozenset({"terminal", "file_editor"}))),
    ('["terminal"]', Approval(tools=frozenset({"terminal"}))),
])
def test_a_policy_is_read_in_every_written_form(written: object, policy: Approval) -> None:
    assert parse_approval(written) == policy


@pytest.mark.parametrize("written", ["ter minal", 3, {"tools": ["terminal"]}, '["unclosed', [None]])
def test_a_policy_that_is_not_one_is_refused_with_the_reason(written: object) -> None:
    with pytest.raises(ValueError, match="approval"):
        parse_approval(written)


def test_always_asks_for_tools_that_act_and_a_list_for_exactly_its_tools() -> None:
    always = parse_approval("always")
    assert always.asks("terminal") and always.asks("file_editor") and always.asks("some_plugin_tool")
    assert not any(always.asks(t) for t in ("think", "finish", "task"))
    listed = parse_approval(["task", "terminal"])
    assert listed.asks("task") and listed.asks("terminal") and not listed.asks("file_editor")
    assert NEVER.never and not NEVER.asks("terminal")


def test_a_subagent_only_adds_to_its_parents_policy() -> None:
    parent = parse_approval("always")
    assert parent.union(parse_approval("never")).asks("terminal")  # never under always still asks
    narrow = parse_approval(["file_editor"])
    child = narrow.union(parse_approval(["terminal"]))
    assert child.asks("file_editor") and child.asks("terminal")
    assert narrow.union(NEVER) == narrow
    assert parse_approval(child.spec()) == child


def test_oh_approval_takes_the_same_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OH_APPROVAL", "terminal,file_editor")
    assert Settings().approval == ["file_editor", "terminal"]
    monkeypatch.setenv("OH_APPROVAL", "always")
    assert Settings().approval == "always"
    monkeypatch.setenv("OH_APPROVAL", "al ways")
    with pytest.raises(ValidationError, match="approval"):
        Settings()


PEER_OPTIONS = [
    PermissionOption(option_id="allow-once", kind="allow_once", name="Allow"),
    PermissionOption(option_id="allow-with-updates", kind="allow_always", name="Always"),
    PermissionOption(option_id="reject", kind="reject_once", name="Reject"),
]


def test_an_answer_names_an_offered_option_by_id_or_by_decision() -> None:
    assert choose_option(PEER_OPTIONS, PermissionAnswer(option_id="reject")).option_id == "reject"
    assert choose_option(PEER_OPTIONS, PermissionAnswer(decision="allow")).option_id == "allow-once"
    assert choose_option(PEER_OPTIONS, PermissionAnswer(decision="allow", always=True)).option_id == "allow-with-updates"
    assert outcome_of(PEER_OPTIONS[2]) == "rejected" and outcome_of(PEER_OPTIONS[1]) == "allowed"
    with pytest.raises(InvalidPermissionAnswer, match="'allow_once' was not offered"):
        choose_option(PEER_OPTIONS, PermissionAnswer(option_id="allow_once"))
    with pytest.raises(InvalidPermissionAnswer, match="no reject_always option"):
        choose_option(PEER_OPTIONS, PermissionAnswer(decision="reject", always=True))


@pytest.mark.parametrize("body", [{}, {"option_id": "a", "decision": "allow"}, {"decision": "maybe"},
                                  {"option_id": "a", "always": True}, {"option_id": ""}, {"option_id": "a", "extra": 1},
                                  {"decision": "reject", "reason": "\ud800"}])
def test_a_malformed_answer_is_refused(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PermissionAnswer.model_validate(body)


def test_the_ledger_folds_requests_and_answers_and_remembers_always_answers() -> None:
    ledger = PermissionLedger()
    asked = [PermissionRequestEvent(request_id=f"r{n}", tool_call_id=f"c{n}", tool_name="terminal",
                                    options=list(NATIVE_OPTIONS)) for n in range(3)]
    for request in asked:
        ledger.take(request)
    ledger.take(PermissionResolvedEvent(request_id="r0", tool_call_id="c0", outcome="allowed", option_id="allow_always", answered_by="rest"))
    ledger.take(PermissionResolvedEvent(request_id="r1", tool_call_id="c1", outcome="cancelled", answered_by="server"))
    ledger.take(PermissionResolvedEvent(request_id="r1", tool_call_id="c1", outcome="allowed", option_id="allow_once"))
    ledger.take(PermissionResolvedEvent(request_id="nope", tool_call_id="c9", outcome="allowed"))
    assert [e.request_id for e in ledger.pending()] == ["r2"]
    assert [e["status"] for e in ledger.listed("all")] == ["allowed", "cancelled", "pending"]
    assert ledger.remembered() == {"terminal": "allow"}


def test_a_request_title_says_what_the_call_would_do() -> None:
    assert request_title("terminal", {"command": "ls  -la\n"}) == "ls -la"
    assert request_title("file_editor", {"command": "create", "path": "a.py"}) == "create a.py"
    assert request_title("task", {"description": "Write docs", "prompt": "..."}) == "Write docs"
    assert request_title("mystery", {"x": 1}) == "mystery"
    assert len(request_title("terminal", {"command": "x" * 500})) == 200
