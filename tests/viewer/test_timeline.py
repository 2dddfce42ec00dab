"""The page's timeline, fed lists of events in the browser (no socket): streaming text, cards
that arrive before their call, ACP tool calls, stale tree answers. Compared as outlines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from playwright.async_api import Browser, Page

from tests.servers import isolated_settings, taskwire_server

# Loads the page's own modules and draws `events` (and then `entries`, a sub-agent tree answer)
# into a Timeline; returns its outline: one line per item, two spaces per level.
OUTLINE_JS = """async ([events, entries]) => {
  const { Timeline } = await import("/static/timeline.js");
  const timeline = new Timeline({ onCancel() {}, onFollow() {}, onCardAdded() {} });
  document.body.replaceChildren(timeline.el);
  for (const event of events) timeline.apply(event);
  if (entries) timeline.applySubagents(entries);
  const lines = [];
  const text = (el, selector) => el.querySelector(selector)?.textContent.trim() ?? "";
  const walk = (list, depth) => {
    for (const item of list.children) {
      const pad = "  ".repeat(depth);
      if (item.classList.contains("call")) {
        const output = item.querySelector(":scope > pre.output, :scope > details pre")?.textContent.split("\\n").pop() ?? "";
        lines.push(`${pad}${text(item, ".tool")} [${item.dataset.status}] ${text(item, ".summary")}${output ? " -> " + output : ""}`);
      } else if (item.classList.contains("message")) {
        const kind = item.classList.contains("streaming") ? "streaming" : text(item, ".who");
        lines.push(`${pad}${kind}: ${text(item, ".text")}`);
      } else if (!item.classList.contains("waiting")) {
        lines.push(`${pad}${item.className}: ${text(item, ".text")}`);
      }
      for (const card of item.querySelectorAll(":scope > .spawned > .card, :scope > .card")) {
        const head = card.querySelector(":scope > .card-head");
        lines.push(`${pad}  card ${text(head, ".subagent-type")} ${text(head, ".subagent-description")} [${card.dataset.status}] ${text(head, ".usage")}`.trimEnd());
        walk(card.querySelector(":scope > .card-body > .timeline"), depth + 2);
      }
    }
  };
  walk(timeline.el, 0);
  return lines;
}"""


@pytest.fixture
async def page(browser: Browser, tmp_path: Path) -> AsyncIterator[Page]:
    """A page on a taskwire server's origin, to load the viewer's modules from."""
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        page = await browser.new_page()
        try:
            await page.goto(f"{server.url}/alive")
            yield page
        finally:
            await page.close()


async def outline(page: Page, events: list[dict[str, Any]], entries: list[dict[str, Any]] | None = None) -> list[str]:
    return await page.evaluate(OUTLINE_JS, [events, entries])


def sub(event: dict[str, Any], subagent_id: str, parent_tool_use_id: str) -> dict[str, Any]:
    """``event`` stamped as sub-agent ``subagent_id``'s."""
    return {**event, "subagent_id": subagent_id, "parent_tool_use_id": parent_tool_use_id}


def action(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"kind": "ActionEvent", "tool_name": tool, "tool_call_id": call_id, "arguments": arguments}


def observation(call_id: str, tool: str, content: str, status: str = "completed") -> dict[str, Any]:
    return {"kind": "ObservationEvent", "tool_name": tool, "tool_call_id": call_id, "content": content, "status": status}


def started(subagent_id: str, call_id: str, description: str, parent: str | None = None) -> dict[str, Any]:
    event = {"kind": "SubagentStartedEvent", "subagent_type": "general-purpose", "description": description}
    if parent:
        event["parent_subagent_id"] = parent
    return sub(event, subagent_id, call_id)


def finished(subagent_id: str, call_id: str, status: str, output_tokens: int = 5) -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": output_tokens, "llm_calls": 1}
    return sub({"kind": "SubagentFinishedEvent", "status": status, "result": "ok", "usage": usage}, subagent_id, call_id)


async def test_streamed_text_shows_as_it_arrives_and_the_stored_message_replaces_it(page: Page) -> None:
    deltas = [{"kind": "StreamingDeltaEvent", "content": part} for part in ("Hel", "lo ", "there")]
    assert await outline(page, deltas) == ["streaming: Hello there"]
    message = {"kind": "MessageEvent", "role": "assistant", "content": "Hello there", "seq": 3}
    assert await outline(page, [*deltas, message]) == ["Agent: Hello there"]
    # A sub-agent streams into its own card, not the main agent's timeline.
    events = [action("t1", "task", description="Helper"), started("s1", "t1", "Helper"), sub(deltas[0], "s1", "t1")]
    assert await outline(page, events) == [
        "task [in_progress] Helper",
        "  card general-purpose Helper [running]",
        "    streaming: Hel",
    ]


async def test_a_retry_shows_in_its_sub_agents_card_and_drops_the_failed_attempts_text(page: Page) -> None:
    retry = {"kind": "LLMRetryEvent", "attempt": 2, "max_attempts": 7, "delay": 4, "reason": "429",
             "error": "rate limited", "discard_text": True, "seq": 4}
    events = [action("t1", "task", description="Helper"), started("s1", "t1", "Helper"),
              sub({"kind": "StreamingDeltaEvent", "content": "Hal"}, "s1", "t1"), sub(retry, "s1", "t1"),
              sub({"kind": "StreamingDeltaEvent", "content": "Hello"}, "s1", "t1")]
    assert await outline(page, events) == [
        "task [in_progress] Helper",
        "  card general-purpose Helper [running]",
        "    item retry: retrying in 4 s (429), attempt 2 of 7",
        "    streaming: Hello",
    ]


async def test_a_card_that_arrives_before_its_call_waits_at_the_root_and_moves_in(page: Page) -> None:
    early = [sub({"kind": "MessageEvent", "role": "user", "content": "Do it."}, "s1", "t1")]
    assert await outline(page, early) == ["  card sub-agent  [running]", "    Task prompt: Do it."]
    late_call = [*early, {"kind": "MessageEvent", "role": "user", "content": "go"}, action("t1", "task", description="Late")]
    assert await outline(page, late_call) == [
        "You: go",
        "task [in_progress] Late",
        "  card sub-agent  [running]",
        "    Task prompt: Do it.",
    ]


async def test_nesting_follows_parent_tool_use_id_through_three_levels(page: Page) -> None:
    events = [
        action("t1", "task", description="One"), started("s1", "t1", "One"),
        sub(action("t2", "task", description="Two"), "s1", "t1"), started("s2", "t2", "Two", parent="s1"),
        sub(action("t3", "task", description="Three"), "s2", "t2"), started("s3", "t3", "Three", parent="s2"),
        sub(action("c3", "terminal", command="echo deep"), "s3", "t3"),
        sub(observation("c3", "terminal", "exit code: 0\ndeep"), "s3", "t3"),
        finished("s3", "t3", "completed"),
        sub(observation("t3", "task", "Sub-agent finished"), "s2", "t2"),
    ]
    assert await outline(page, events) == [
        "task [in_progress] One",
        "  card general-purpose One [running]",
        "    task [in_progress] Two",
        "      card general-purpose Two [running]",
        "        task [completed] Three -> Sub-agent finished",
        "          card general-purpose Three [completed] 10 in · 5 out tokens",
        "            terminal [completed] $ echo deep -> deep",
    ]


async def test_acp_tool_calls_keep_their_last_update_and_hold_their_subagents(page: Page) -> None:
    events = [
        {"kind": "ACPToolCallEvent", "tool_call_id": "toolu_1", "title": "Task", "status": "pending", "tool_kind": "think"},
        started("s1", "toolu_1", "Echo subagent-a"),
        sub({"kind": "ACPToolCallEvent", "tool_call_id": "toolu_2", "title": "echo subagent-a", "status": "in_progress", "tool_kind": "execute"}, "s1", "toolu_1"),
        sub({"kind": "ACPToolCallEvent", "tool_call_id": "toolu_2", "status": "completed", "raw_output": "subagent-a"}, "s1", "toolu_1"),
        {"kind": "ACPToolCallEvent", "tool_call_id": "toolu_1", "status": "completed"},
    ]
    assert await outline(page, events) == [
        "think [completed] Task",
        "  card general-purpose Echo subagent-a [running]",
        "    execute [completed] echo subagent-a -> subagent-a",
    ]


async def test_a_stale_tree_answer_never_takes_a_finished_subagent_back_to_running(page: Page) -> None:
    events = [action("t1", "task", description="Quick"), started("s1", "t1", "Quick"), finished("s1", "t1", "cancelled", output_tokens=7)]
    stale = [{"subagent_id": "s1", "parent_tool_use_id": "t1", "status": "running", "usage": {"input_tokens": 1, "output_tokens": 0}}]
    assert await outline(page, events, stale) == [
        "task [in_progress] Quick",
        "  card general-purpose Quick [cancelled] 10 in · 7 out tokens",
    ]
