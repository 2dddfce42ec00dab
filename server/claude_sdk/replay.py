"""ReplaySession: a recorded SDK transcript played as if Claude Code were sending it.

Chosen by the agent spec's ``replay`` (a path), as the scripted LLM is chosen by a setting: the
backend and its dispatcher run exactly as with the real CLI, only the messages come from a
file. Each prompt plays the transcript's next turn: its messages up to the result that answers
a prompt (patched to name this prompt), and, after the last such result, everything left
(a background sub-agent finishing after the result, say).

A recorded ``can_use_tool`` call (``PermissionAsk``) is made of the backend's callback when it
has one, and the replay waits for its answer before it goes on, as Claude Code did; the
answers are kept in ``answers`` (``PermissionResultAllow`` / ``PermissionResultDeny``).
Without a callback it is skipped.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any, AsyncIterator

from claude_agent_sdk import ResultMessage, ToolPermissionContext
from claude_agent_sdk.types import CanUseTool

from .transcript import PermissionAsk, load_transcript
from ..errors import BadRequest, ClaudeSDKError

_END = object()


def split_turns(messages: list[Any]) -> list[list[Any]]:
    """The transcript cut after each result that answers a prompt (one Claude Code did not
    start by itself); what follows the last one stays with it."""
    turns: list[list[Any]] = [[]]
    for message in messages:
        turns[-1].append(message)
        if isinstance(message, ResultMessage) and message.origin is None:
            turns.append([])
    tail = turns.pop()
    if tail and len(turns) > 0:
        turns[-1].extend(tail)
    elif tail:
        turns.append(tail)
    return turns


class ReplaySession:
    """Implements ``MessageSource`` from a transcript."""

    def __init__(self, messages: list[Any]) -> None:
        self._turns = split_turns(messages)
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._prompt_id: str | None = None
        self._feeding: asyncio.Task[None] | None = None
        self.can_use_tool: CanUseTool | None = None
        """The permission callback, as ``ClaudeAgentOptions.can_use_tool`` would be."""
        self.answers: list[Any] = []
        """What each recorded ``can_use_tool`` call was answered, in order."""

    @classmethod
    async def load(cls, path: str | Path, roots: list[Path] | None = None) -> ReplaySession:
        """The session a transcript file records, read only under ``roots`` (``load_transcript``).
        Read and parsed in a thread: a transcript may have 64 MiB, seconds of parsing that
        would hold every other conversation on the loop. Cancelled, it leaves nothing behind:
        the session exists only once the whole file is parsed."""
        return cls(await asyncio.to_thread(load_transcript, path, roots))

    async def connect(self) -> None:
        return None

    async def query(self, text: str, prompt_id: str) -> None:
        if not self._turns:
            raise ClaudeSDKError("the replayed transcript has no turn left for this prompt", code="replay_exhausted")
        self._prompt_id = prompt_id
        turn = self._turns.pop(0)
        if not any(isinstance(message, PermissionAsk) for message in turn):
            for message in turn:
                self._queue.put_nowait(self._answering(message))
            return
        self._feeding = asyncio.create_task(self._feed(turn), name="replay feed")

    async def _feed(self, turn: list[Any]) -> None:
        for message in turn:
            if not isinstance(message, PermissionAsk):
                self._queue.put_nowait(self._answering(message))
                await asyncio.sleep(0)  # as a pipe would: the reader takes what came first
            elif self.can_use_tool is not None:
                context = ToolPermissionContext(
                    tool_use_id=message.tool_use_id, agent_id=message.agent_id, decision_reason=message.decision_reason
                )
                self.answers.append(await self.can_use_tool(message.tool_name, message.input, context))

    def _answering(self, message: Any) -> Any:
        if isinstance(message, ResultMessage) and message.origin is None and self._prompt_id:
            return dataclasses.replace(
                message, user_message_uuid=self._prompt_id, user_message_uuids=[self._prompt_id]
            )
        return message

    async def receive(self) -> AsyncIterator[Any]:
        while True:
            message = await self._queue.get()
            if message is _END:
                return
            yield message

    async def stop_task(self, task_id: str) -> None:
        raise BadRequest("a replayed transcript cannot stop one of its sub-agents", code="subagent_not_cancellable")

    async def interrupt(self) -> None:
        # What Claude Code does: drop the rest of the turn (and a callback it waits for),
        # answer with an aborted result.
        await self._stop_feeding()
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(
            self._answering(
                ResultMessage(
                    subtype="error_during_execution", duration_ms=0, duration_api_ms=0, is_error=True,
                    num_turns=0, session_id="replay", terminal_reason="aborted_streaming",
                )
            )
        )

    async def _stop_feeding(self) -> None:
        if self._feeding is not None:
            self._feeding.cancel()
            await asyncio.gather(self._feeding, return_exceptions=True)
            self._feeding = None

    async def close(self) -> None:
        await self._stop_feeding()
        self._queue.put_nowait(_END)
