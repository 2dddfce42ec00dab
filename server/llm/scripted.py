"""``ScriptedLLM``: the scripted model in process, implementing the ``LLM`` protocol."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..confined_files import Roots
from ..errors import LLMError
from .base import CallObserver, LLMRequest, LLMResponse, OnDelta
from .script import (
    Script,
    ScriptRequest,
    canonical_json,
    count_assistant_turns,
    text_chunks,
)


class ScriptedLLM:
    """Answers from a ``Script``: text streams to ``on_delta`` in a few chunks; an ``error``
    turn or an extra call raises ``LLMError``. Tool call ids default to
    ``call_<lane>_<turn>_<n>``."""

    def __init__(
        self, script: Script | str | Path | Mapping[str, Any], *, pace: float = 0.0, roots: Roots = None
    ) -> None:
        """``roots``: where a script file may lie (``Script.load``)."""
        self.script = Script.load(script, roots=roots)
        self.pace = pace
        """Every answer waits at least this many seconds (a demo paced for a person)."""

    async def complete(
        self, request: LLMRequest, on_delta: OnDelta | None = None, observer: CallObserver | None = None
    ) -> LLMResponse:
        """Never retried: a scripted failure is the scenario, not a provider's mood."""
        step = self.script.select(script_request(request), id_prefix="call")
        delay = max(step.delay, self.pace)
        if delay:
            await asyncio.sleep(delay)
        if step.error is not None or step.fault is not None:
            failure = step.error if step.error is not None else f"scripted fault {step.fault}"
            raise LLMError(f"scripted model failed (lane {step.lane}, turn {step.turn}): {failure}")
        if on_delta is not None:
            for chunk in text_chunks(step.text):
                await on_delta(chunk)
        return LLMResponse(
            id=f"scripted_{step.response_id}",
            text=step.text,
            tool_calls=step.tool_calls,
            stop_reason="tool_use" if step.tool_calls else "end_turn",
            usage=step.usage,
        )

    def unused_steps(self) -> list[tuple[str, int]]:
        """The script's steps never served (see ``Script.unused_steps``)."""
        return self.script.unused_steps()

    async def aclose(self) -> None:
        return None


def script_request(request: LLMRequest) -> ScriptRequest:
    """The selecting view of an in-process request."""
    users = [m.content for m in request.messages if m.role == "user"]
    chars = len(request.system) + sum(
        len(m.content) + sum(len(c.name) + len(canonical_json(c.arguments)) for c in m.tool_calls)
        for m in request.messages
    )
    return ScriptRequest(
        system=request.system,
        first_user=users[0] if users else "",
        last_user=users[-1] if users else "",
        assistant_turns=count_assistant_turns([m.role for m in request.messages]),
        tools=tuple(t.name for t in request.tools),
        prompt_chars=chars,
    )
