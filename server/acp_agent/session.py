"""One ACP session: a root conversation, its feed through the projection, its prompt turns.

The feed runs for the session's life (from ``session/new`` or the end of ``session/load``'s
replay): every event goes through the ``ACPProjection`` and every update it makes is sent as a
``session/update`` in order. A prompt turn records the log's end, sends the message, and waits
for the projection's ``RunEnded`` past that point; the updates of the run all went out before
it, so the prompt's answer comes last, as ACP wants. A permission request of the tree is sent
to the editor as ``session/request_permission`` meanwhile (``asking.EditorAsks``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import PromptResponse
from acp.schema import Usage as ACPUsage
from pydantic import ValidationError

from ..acp.child_session_projection import ChildSessionProjection
from ..acp.projection import ACPProjection
from ..acp.updates import Ask, RunEnded, Settled, Update
from .asking import EditorAsks
from .base import Conversations
from ..errors import TaskwireError
from ..events import Usage

log = logging.getLogger(__name__)

CANCEL_REASON = "the turn was cancelled"


@dataclass(slots=True)
class Turn:
    """One ``session/prompt`` in flight."""

    after_seq: int
    """The log's end before the prompt was sent: the run that ends past it is this turn's."""
    ended: asyncio.Future[RunEnded] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    sent: bool = False
    cancel_requested: bool = False

    def end(self, result: RunEnded) -> None:
        if not self.ended.done():
            self.ended.set_result(result)

    def fail(self, error: BaseException) -> None:
        if not self.ended.done():
            self.ended.set_exception(error)


class AgentSession:
    """The ACP session ``session_id`` (a root conversation's id) on one client connection."""

    def __init__(
        self, session_id: str, conversations: Conversations, client: Client, projection: ACPProjection,
        children: ChildSessionProjection | None = None,
    ) -> None:
        self.id = session_id
        self.conversations = conversations
        self.client = client
        self.projection = projection
        self.children = children
        """The tree's sub-agents as child sessions (an editor that declared ``subagents``), or
        ``None``: the flattened form, every update on this session."""
        self.asks = EditorAsks(session_id, conversations, client)
        self._last_seq = 0
        self._turn: Turn | None = None
        self._feed: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        """Why the feed stopped for good (the conversation was deleted, the key refused)."""
        self._lock = asyncio.Lock()
        """Held while one batch of events is projected and sent, so updates never interleave."""

    # -- the feed ---------------------------------------------------------------------------

    async def replay(self) -> int:
        """Send the stored log as updates (``session/load``); returns the last ``seq`` sent."""
        async for page in self.conversations.history(self.id):
            await self.take(page, replaying=True)
        return self._last_seq

    def start(self, after_seq: int) -> None:
        """Follow the conversation live from ``after_seq``."""
        self._last_seq = max(self._last_seq, after_seq)
        self.asks.release()
        self._feed = asyncio.create_task(self._follow(), name=f"acp feed {self.id}")

    async def _follow(self) -> None:
        try:
            await self.conversations.follow(self.id, self._last_seq, self.take, self.projection.resumed)
        except asyncio.CancelledError:
            raise
        except ConnectionError:
            log.info("session %s: the client is gone", self.id)
        except TaskwireError as exc:
            log.warning("session %s: the feed stopped: %s", self.id, exc.detail)
            self._stopped(exc)
        except Exception as exc:  # our bug: the prompt learns of it instead of hanging
            log.exception("session %s: the feed failed", self.id)
            self._stopped(RequestError.internal_error({"detail": f"the session's feed failed: {exc!r}"}))

    def _stopped(self, failure: BaseException) -> None:
        self._failure = failure
        if self._turn is not None:
            self._turn.fail(failure)

    async def take(self, events: list[dict[str, Any]], *, replaying: bool = False) -> None:
        """Project a batch of events (in order) and send what it makes."""
        async with self._lock:
            for event in events:
                seq = event.get("seq")
                if seq is not None:
                    if seq <= self._last_seq:
                        continue  # seen (a replay's end and the feed's start may overlap)
                    self._last_seq = seq
                outputs = self.projection.receive(event, replaying=replaying)
                if self.children is not None:
                    outputs = self.children.route(event, outputs, replaying=replaying)
                for output in outputs:
                    if isinstance(output, Update):
                        await self._send(output)
                    elif isinstance(output, (Ask, Settled)):
                        self.asks.take(output, replaying=replaying)
                    elif self._turn is not None and output.seq > self._turn.after_seq:
                        self._turn.end(output)

    async def _send(self, update: Update) -> None:
        session_id = update.session_id or self.id
        try:
            if update.raw:
                # The Python SDK's models lack the subagents RFD's variants: sent as built.
                await self.client._conn.send_notification(  # type: ignore[attr-defined]
                    "session/update", {"sessionId": session_id, "update": update.payload})
                return
            # The package validates the payload into its model as it builds the notification:
            # once, not twice (a replay sends tens of thousands).
            await self.client.session_update(session_id=session_id, update=update.payload)  # type: ignore[arg-type]
        except ValidationError:  # a mapping bug: one update lost is better than a dead session
            log.exception("session %s: an update does not validate: %r", self.id, update.payload)

    async def publish_states(self) -> None:
        """After ``session/load``'s answer: each child session's current state."""
        if self.children is None:
            return
        try:
            async with self._lock:
                for update in self.children.current_states():
                    await self._send(update)
        except ConnectionError:
            log.info("session %s: the client left before its children's states were sent", self.id)

    async def cancel_child(self, child_id: str) -> None:
        """``session/cancel`` naming a child: that sub-agent alone is cancelled (its state then
        goes ``idle`` / ``cancelled`` with its ``SubagentFinishedEvent``). A notification has no
        answer: what cannot be done is logged."""
        child = self.children.child(child_id) if self.children is not None else None
        if child is None:
            return
        if child.finished:
            log.warning("session %s: session/cancel of child %s, which has already finished", self.id, child_id)
            return
        if not child.cancellable:
            log.warning("session %s: session/cancel of child %s, which has no cancel capability", self.id, child_id)
            return
        try:
            await self.conversations.cancel_subagent(self.id, child_id)
        except TaskwireError as exc:
            log.warning("session %s: could not cancel child %s: %s", self.id, child_id, exc.detail)

    async def steer_child(self, child_id: str, text: str) -> PromptResponse:
        """``session/prompt`` naming a child: the text goes to that sub-agent as a person's
        message, read before its next model call (``POST .../subagents/{id}/messages``). The
        answer comes once it has the message (``end_turn``); what the sub-agent does with it
        streams on its child session as before. One that has ended, or whose agent takes no
        message, is a JSON-RPC error with the reason (``data.code`` ``subagent_not_running`` /
        ``subagent_not_steerable``)."""
        await self.conversations.steer_subagent(self.id, child_id, text)
        return PromptResponse(stop_reason="end_turn")

    async def close(self) -> None:
        """Stop following (the conversation itself goes on, or stops with the host)."""
        if self._feed is not None:
            self._feed.cancel()
            await asyncio.gather(self._feed, return_exceptions=True)
        await self.asks.close()
        if self._turn is not None:
            self._turn.fail(RequestError.internal_error({"detail": "the session was closed"}))

    # -- prompt turns -----------------------------------------------------------------------

    async def prompt(self, text: str) -> PromptResponse:
        """Run one turn to its end. ``end_turn`` when the run finished, ``cancelled`` after
        ``session/cancel`` (or when the run was stopped elsewhere), ``max_turn_requests`` when
        it ran out of iterations, ``max_tokens`` when its tree passed its ``max_tokens`` budget; a run that failed is a JSON-RPC error with its reason."""
        if self._turn is not None:
            raise RequestError.invalid_request({"detail": "a prompt is already running in this session"})
        if self._failure is not None:
            raise self._failure  # nothing would tell this turn's end
        before = await self.conversations.info(self.id)
        used_before = await self.conversations.tree_usage(self.id)
        turn = self._turn = Turn(before.last_seq)
        try:
            self.projection.expect_prompt(text)
            try:
                await self.conversations.send(self.id, text)
            except BaseException:
                self.projection.expect_prompt(None)  # it was never recorded: nothing to hide
                raise
            turn.sent = True
            if turn.cancel_requested:
                await self._interrupt(turn)
            ended = await turn.ended
        finally:
            self._turn = None
        try:
            usage = _turn_usage(used_before, await self.conversations.tree_usage(self.id))
        except TaskwireError as exc:  # the turn is over whatever its tokens were
            log.warning("session %s: the turn's usage could not be read: %s", self.id, exc.detail)
            usage = None
        if not turn.cancel_requested and ended.status == "paused" and (ended.reason or "").startswith("max_tokens "):
            return PromptResponse(stop_reason="max_tokens", usage=usage)  # the tree's token budget passed
        if turn.cancel_requested or ended.status == "paused":
            return PromptResponse(stop_reason="cancelled", usage=usage)
        if ended.status == "finished":
            return PromptResponse(stop_reason="end_turn", usage=usage)
        if ended.code == "max_iterations":
            return PromptResponse(stop_reason="max_turn_requests", usage=usage)
        raise RequestError(-32603, ended.error or "the run failed", {"code": ended.code or "run_failed"})

    async def cancel(self) -> None:
        """``session/cancel``: interrupt the run; the prompt then answers ``cancelled``."""
        turn = self._turn
        if turn is None or turn.cancel_requested:
            return
        turn.cancel_requested = True
        if turn.sent:
            await self._interrupt(turn)

    async def _interrupt(self, turn: Turn) -> None:
        try:
            await self.conversations.interrupt(self.id)
        except TaskwireError as exc:
            # taskwire cannot be reached: the editor's turn ends now all the same, with every
            # call it was shown closed by the closing rule.
            log.warning("session %s: could not interrupt the run: %s", self.id, exc.detail)
            async with self._lock:
                for update in self.projection.close_open(CANCEL_REASON):
                    await self._send(update)
            turn.end(RunEnded(self._last_seq, "paused"))


def _turn_usage(before: Usage, after: Usage) -> ACPUsage | None:
    """The tokens a turn used across the tree (ACP's unstable ``PromptResponse.usage``)."""
    input_tokens = max(after.input_tokens - before.input_tokens, 0)
    output_tokens = max(after.output_tokens - before.output_tokens, 0)
    cached = max(after.cache_read_tokens - before.cache_read_tokens, 0)
    if not (input_tokens or output_tokens or cached):
        return None
    return ACPUsage(
        total_tokens=input_tokens + output_tokens + cached,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_read_tokens=cached,
    )
