"""The script format and its stateless lane/turn selection, without any I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskwire.errors import LLMError
from taskwire.llm.script import UNSCRIPTED_REPLY, Script, ScriptRequest, count_assistant_turns
from tests.llm.conftest import DEMO

SCRIPT = """
lanes:
  - name: sub-a
    match: {first_user_ends_with: "do A."}
    turns:
      - tool_calls:
          - {name: terminal, arguments: {command: echo a}}
      - text: A done
  - name: reviewer
    match: {system_contains: "You review code"}
    turns:
      - text: looks fine
  - name: main
    turns:
      - text: hello
        tool_calls:
          - {name: task, arguments: {prompt: do A.}}
          - {name: task, id: my-own-id, arguments: {prompt: do B.}}
      - text: bye
"""


def request(first_user: str = "go", *, turns: int = 0, system: str = "", last_user: str | None = None,
            tools: tuple[str, ...] = ()) -> ScriptRequest:
    return ScriptRequest(
        system=system,
        first_user=first_user,
        last_user=first_user if last_user is None else last_user,
        assistant_turns=turns,
        tools=tools,
        prompt_chars=len(system) + len(first_user),
    )


def test_lane_is_chosen_by_first_user_message_and_turn_by_history_length() -> None:
    script = Script.load(SCRIPT)
    assert script.select(request("Please do A.")).tool_calls[0].arguments == {"command": "echo a"}
    assert script.select(request("Please do A.", turns=1)).text == "A done"
    assert script.select(request("Start", turns=1)).text == "bye"


def test_interleaved_lanes_do_not_disturb_each_other() -> None:
    script = Script.load(SCRIPT)
    steps = [
        script.select(request("Start")),
        script.select(request("Please do A.")),
        script.select(request("x", system="You review code carefully")),
        script.select(request("Please do A.", turns=1)),
        script.select(request("Start", turns=1)),
    ]
    assert [(s.lane, s.turn) for s in steps] == [
        ("main", 0), ("sub-a", 0), ("reviewer", 0), ("sub-a", 1), ("main", 1)
    ]
    assert script.unused_steps() == []


def test_tool_call_ids_are_derived_from_lane_turn_and_position_unless_given() -> None:
    script = Script.load(SCRIPT)
    calls = script.select(request("Start"), id_prefix="toolu").tool_calls
    assert [c.id for c in calls] == ["toolu_main_0_0", "my-own-id"]
    assert script.select(request("Start"), id_prefix="call").tool_calls[0].id == "call_main_0_0"


def test_a_strict_script_fails_an_extra_call_loudly_and_records_it() -> None:
    script = Script.load("strict: true\n" + SCRIPT)
    with pytest.raises(LLMError, match="script exhausted for lane sub-a at turn 2"):
        script.select(request("Please do A.", turns=2))
    assert script.failures == ["script exhausted for lane sub-a at turn 2"]


def test_a_strict_script_fails_a_request_no_lane_matches() -> None:
    script = Script.load({"strict": True, "lanes": [{"name": "only", "match": {"first_user_contains": "x"},
                                                      "turns": [{"text": "hi"}]}]})
    with pytest.raises(LLMError, match="no lane matches"):
        script.select(request("something else"))


def test_by_default_a_request_without_a_turn_gets_a_plain_unscripted_reply() -> None:
    script = Script.load(SCRIPT)
    extra = script.select(request("Please do A.", turns=2))
    stray = Script.load({"lanes": [{"name": "only", "match": {"first_user_contains": "x"}, "turns": [{"text": "hi"}]}]})
    unmatched = stray.select(request("something else"))
    for step in (extra, unmatched):
        assert step.text == UNSCRIPTED_REPLY and step.tool_calls == [] and step.error is None
        assert step.usage.llm_calls == 1
    assert "OH_LLM_API" in UNSCRIPTED_REPLY
    assert script.failures == [] and script.unscripted == ["script exhausted for lane sub-a at turn 2"]
    assert stray.status()["unscripted"][0].startswith("no lane matches")


def test_unused_steps_lists_what_was_never_served() -> None:
    script = Script.load(SCRIPT)
    script.select(request("Start"))
    assert script.unused_steps() == [("sub-a", 0), ("sub-a", 1), ("reviewer", 0), ("main", 1)]
    assert script.status()["unused"][0] == {"lane": "sub-a", "turn": 0}


def test_match_conditions_all_have_to_hold() -> None:
    script = Script.load({"lanes": [
        {"name": "both", "match": {"first_user_contains": "fix", "has_tool": "Bash"},
         "turns": [{"text": "both"}]},
        {"name": "exact", "match": {"first_user_equals": "fix it"}, "turns": [{"text": "exact"}]},
        {"name": "late", "match": {"last_user_contains": "[SUGGEST"}, "turns": [{"text": ""}]},
    ]})
    assert script.select(request("fix it", tools=("Bash",))).lane == "both"
    assert script.select(request("  fix it \n")).lane == "exact"
    assert script.select(request("fix it", last_user="[SUGGEST now]", turns=0)).lane == "exact"
    assert script.select(request("hello", last_user="[SUGGEST now]")).lane == "late"


def test_repeat_lane_answers_every_time_and_optional_lane_is_never_unused() -> None:
    script = Script.load({"presets": ["claude_code"], "lanes": [{"name": "main", "turns": [{"text": "x"}]}]})
    title = request("<session>hi</session>", system="You are naming a coding session so ...")
    for turns in (0, 0, 5):
        assert script.select(request(title.first_user, system=title.system, turns=turns)).text.startswith(
            '{"title"'
        )
    assert script.unused_steps() == [("main", 0)]


def test_a_lane_of_the_script_replaces_the_preset_lane_of_the_same_name() -> None:
    script = Script.load({"presets": ["claude_code"], "lanes": [
        {"name": "claude-code-title", "optional": True, "match": {"system_contains": "naming"},
         "turns": [{"text": '{"title": "Mine"}'}]},
        {"name": "main", "turns": [{"text": "x"}]},
    ]})
    assert script.select(request("s", system="naming")).text == '{"title": "Mine"}'


def test_error_turn_fails_every_time_or_only_the_first_n_times() -> None:
    script = Script.load({"lanes": [{"name": "main", "turns": [
        {"error": "overloaded", "status": 529, "fail_times": 1, "text": "recovered"},
        {"error": "always broken"},
    ]}]})
    first = script.select(request())
    assert (first.error, first.status, first.text) == ("overloaded", 529, "")
    second = script.select(request())
    assert (second.error, second.text) == (None, "recovered")
    assert script.select(request(turns=1)).error == "always broken"


def test_usage_is_fixed_when_given_and_otherwise_derived_deterministically() -> None:
    fixed = Script.load({"usage": {"input_tokens": 7, "output_tokens": 3}, "lanes": [
        {"name": "main", "turns": [{"text": "a"}, {"text": "b", "usage": {"input_tokens": 1}}]}]})
    assert fixed.select(request()).usage.model_dump() == {
        "input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 0, "cache_write_tokens": 0, "llm_calls": 1,
        "cost_usd": None, "unpriced_calls": 0}
    assert fixed.select(request(turns=1)).usage.input_tokens == 1

    derived = Script.load({"lanes": [{"name": "main", "turns": [{"text": "x" * 40}]}]})
    long_prompt = request("y" * 400)
    assert derived.select(long_prompt).usage == derived.select(long_prompt).usage
    assert derived.select(long_prompt).usage.input_tokens == 100
    assert derived.select(long_prompt).usage.output_tokens == 10


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("lanes: []", "lanes: List should have at least 1 item"),
        ("lanes:\n  - {name: main, turns: [{}]}", "a turn needs `text`, `tool_calls` or `error`"),
        ("lanes:\n  - {name: a, turns: [{text: x}]}\n  - {name: b, turns: [{text: y}]}",
         "at most one lane may omit `match`"),
        ("lanes:\n  - {name: a, turns: [{text: x}]}\n  - {name: a, match: {has_tool: T}, turns: [{text: y}]}",
         "repeated: a"),
        ("lanes:\n  - {name: a, turns: [{text: x, colour: red}]}", "colour: Extra inputs are not permitted"),
        ("lanes:\n  - {name: 'a b', turns: [{text: x}]}", "lanes.0.name"),
        ("lanes: [", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        ("lanes:\n  - {name: a, turns: [{text: x, error: e, fault: reset}]}", "a turn has `error` or `fault`, not both"),
        ("lanes:\n  - {name: a, turns: [{fault: stall}]}", "a turn needs `text`, `tool_calls` or `error`"),
        ("lanes:\n  - {name: a, turns: [{text: x, fault: melt}]}", "fault: Input should be 'reset', 'stall' or 'cut'"),
        ("random_faults: {share: 0}\nlanes:\n  - {name: a, turns: [{text: x}]}", "random_faults.share"),
    ],
)
def test_invalid_script_is_rejected_with_a_readable_reason(script: str, reason: str) -> None:
    with pytest.raises(LLMError) as caught:
        Script.load(script if "\n" in script else script + "\n")
    assert reason in caught.value.detail


def test_a_fault_breaks_the_first_times_and_random_faults_draw_a_seeded_share() -> None:
    script = Script.load({"lanes": [{"name": "main", "turns": [{"text": "whole", "fault": "cut", "fail_times": 1}]}]})
    first, second = script.select(request("hi")), script.select(request("hi"))
    assert (first.fault, first.text) == ("cut", "whole")  # the answer a fault breaks on its way
    assert (second.fault, second.text) == (None, "whole")
    faults = {"random_faults": {"share": 0.3, "retry_after": 1, "seed": 4}, "lanes": [{"name": "main", "turns": [{"text": "x"}]}]}
    one, other = Script.load(faults), Script.load(faults)
    drawn = [one.random_fault() is not None for _ in range(1000)]
    assert drawn == [other.random_fault() is not None for _ in range(1000)]  # seeded: the same every run
    assert 250 <= sum(drawn) <= 350


def test_script_loads_from_a_path_and_a_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCRIPT)
    assert Script.load(path).spec.lanes[0].name == "sub-a"
    assert Script.load(str(path)).spec.lanes[0].name == "sub-a"
    with pytest.raises(LLMError, match="script file not found: .*nope.yaml"):
        Script.load(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize("name", sorted(p.name for p in DEMO.glob("*.yaml")))
def test_demo_scripts_are_valid(name: str) -> None:
    assert Script.load(DEMO / name).unused_steps()


def test_consecutive_assistant_messages_count_as_one_turn() -> None:
    assert count_assistant_turns(["user", "assistant", "assistant", "user", "assistant"]) == 2
    assert count_assistant_turns(["user"]) == 0
