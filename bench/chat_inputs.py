"""What ``gen_ai.input.messages`` costs: bytes per ``chat`` span as a conversation grows.

Sans-I/O, through ``SpanBuilder`` with content capture on: a root conversation of N turns, each
a user message (~200 chars), one tool call (~100 chars of arguments) with its result (--result
chars), and the answer; two ``chat`` spans per turn. Prints the input's bytes on the last chat
span and in all, beside the bound (``MAX_HISTORY_CHARS``), and the builder's time per record.

    .venv/bin/python bench/chat_inputs.py [--turns 10 100] [--result 2000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from taskwire.events import ActionEvent, ConversationStateUpdateEvent, Event, MessageEvent, ObservationEvent  # noqa: E402
from taskwire.store.rows import event_record  # noqa: E402
from taskwire.telemetry.chat_history import MAX_HISTORY_CHARS  # noqa: E402
from taskwire.telemetry.span_builder import SpanBuilder  # noqa: E402


def usage(response_id: str) -> ConversationStateUpdateEvent:
    added = {"model": "m", "input_tokens": 1, "output_tokens": 1, "started_at": "2026-01-01T00:00:00Z", "response_id": response_id}
    return ConversationStateUpdateEvent(key="usage", value={"added": added})


def conversation(turns: int, result: int) -> list[Event]:
    events: list[Event] = [ConversationStateUpdateEvent(key="status", value="running")]
    for n in range(turns):
        events += [
            MessageEvent(role="user", content=f"turn {n}: " + "please look at this " * 10),
            usage(f"a{n}"),
            ActionEvent(tool_name="terminal", tool_call_id=f"c{n}", arguments={"command": "grep -rn pattern " + "x" * 70}, llm_response_id=f"a{n}"),
            ObservationEvent(tool_name="terminal", tool_call_id=f"c{n}", content="y" * result),
            usage(f"b{n}"),
            MessageEvent(role="assistant", content="Here is what I found. " * 5),
        ]
    events.append(ConversationStateUpdateEvent(key="status", value="finished"))
    return events


def measure(turns: int, result: int) -> tuple[int, int, int, float]:
    builder = SpanBuilder(capture_content=True)
    events = conversation(turns, result)
    records = []
    for seq, event in enumerate(events, start=1):
        event.seq = seq
        records.append(event_record("root", "root", event))
    started = time.perf_counter()
    for record in records:
        builder.receive(record)
    elapsed = time.perf_counter() - started
    chats = [s for s in builder.spans_to_export() if s.attributes.get("gen_ai.operation.name") == "chat"]
    sizes = [len(str(s.attributes["gen_ai.input.messages"]).encode()) for s in chats]
    partial = sum(1 for s in chats if s.attributes.get("taskwire.input.partial"))
    return sizes[-1], sum(sizes), partial, elapsed / len(records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--result", type=int, default=2000)
    args = parser.parse_args()
    table = Table(title=f"gen_ai.input.messages per chat span (tool results of {args.result} chars)")
    for column in ("turns", "chat spans", "last span (bytes)", "all spans (bytes)", "partial spans", "bound (chars)", "µs/record"):
        table.add_column(column, justify="right")
    for turns in args.turns:
        last, total, partial, per_record = measure(turns, args.result)
        table.add_row(str(turns), str(2 * turns), f"{last:,}", f"{total:,}", str(partial), f"{MAX_HISTORY_CHARS:,}", f"{per_record:.1f}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
