"""EventStream: one live subscriber's event stream, without I/O.

The socket (or SSE, webhook, terminal watcher) endpoint only moves data: it answers the
stream's store queries, hands it bus records, and writes the frames it produces. The stream
decides everything else:

- resume: it starts after ``after_seq`` and knows the ``seq`` to resume from (``resume_seq``);
- filters: which streams of the tree the subscriber sees (``taskwire.stream.view``);
- order: frames go out in ``seq`` order, never a duplicate (a record at or below the cursor is
  dropped), never a gap: a bus record whose ``prev_seq`` is past the cursor means the bus lost
  something, and the stream asks the store for that range before going on;
- the ``cancelled`` -> ``failed`` downgrade for ``event_schema=1``;
- the slow-client decision: a bus overflow, or a client that takes no frame for the
  endpoint's write timeout (``receive_stall``), closes with ``CloseCode.TOO_SLOW`` and the
  ``seq`` to resume from.

Driving it::

    stream = EventStream(root_id, after_seq=..., snapshot_seq=await store.last_seq(root_id), ...)
    while stream.close_code() is None:
        query = stream.store_query()
        if query is not None:                      # the replay, or a gap fill
            page = await store.search(query, limit=100)
            stream.receive_stored(page.items, exhausted=page.next_page_id is None)
        else:
            try:
                stream.receive_live(await subscription.get())
            except Overflow:
                stream.receive_overflow()
        for frame in stream.frames_to_send():
            await send(frame)
    await close(stream.close_code(), stream.close_reason)

Bus records may be handed over at any time, also while a store query is out: they wait (at
most ``max_pending``; the oldest go first, and their ``prev_seq`` chain brings them back from
the store).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Mapping

from ..events import EventRecord
from ..store import EventQuery
from taskwire_client.close_codes import CloseCode
from .schema import EventSchema, wire_json
from .view import SubagentNode, SubagentsParam, View, ViewKind

TreeEntry = SubagentNode | Mapping[str, Any]


class EventStream:
    """The event stream of one subscriber of one conversation tree."""

    def __init__(
        self,
        root_id: str,
        *,
        after_seq: int = 0,
        snapshot_seq: int = 0,
        subagents: SubagentsParam = "all",
        parent_tool_use_id: str | None = None,
        scope_subagent_id: str | None = None,
        schema: EventSchema = 2,
        forwarding: bool = False,
        tree: Iterable[TreeEntry] = (),
        max_pending: int = 10_000,
    ) -> None:
        """
        ``after_seq``: send only records past it (0: from the start).
        ``snapshot_seq``: the tree's last ``seq`` as read from the store *before* ``tree`` was
        taken: ``tree`` then holds every sub-agent started at or before it, and a replay that
        reads to the end has seen every record up to it. 0 (the safe default) claims nothing.
        ``scope_subagent_id``: the socket was opened on this sub-agent: only its subtree.
        ``tree``: the sub-agents known at the start (``full_state["subagents"]`` entries).
        """
        self.root_id = root_id
        self._view = View(
            root_id,
            forwarding=forwarding,
            subagents=subagents,
            parent_tool_use_id=parent_tool_use_id,
            scope_subagent_id=scope_subagent_id,
            tree=[e if isinstance(e, SubagentNode) else SubagentNode.from_entry(e) for e in tree],
        )
        self._forwarding = forwarding
        self._schema = schema
        self._cursor = after_seq
        """Every visible record with ``seq <= cursor`` has been turned into a frame."""
        self._snapshot_seq = snapshot_seq
        self._tree_known_through = snapshot_seq
        """Every sub-agent started at or before this ``seq`` is in the view's tree."""
        self._frames: list[str] = []
        self._frame_seqs: list[int | None] = []
        """The ``seq`` of each frame in ``_frames`` (``None``: ephemeral)."""
        self._batch_seqs: list[int | None] = []
        """The ``seq`` of each frame of the batch ``frames_to_send`` handed out last."""
        self._batch_after = after_seq
        """Everything visible up to here went out before the last batch."""
        self._handed_through = after_seq
        """The cursor when the last batch was handed out."""
        self._pending: deque[EventRecord] = deque(maxlen=max_pending)
        self._reading = True
        self._read_until: int | None = None
        """The end of the range being read from the store; ``None`` during the replay (to the end)."""
        self._query: EventQuery | None = None
        self._replaying = True
        self._close: CloseCode | None = None
        self.close_reason = ""
        self._advance()

    # -- what the endpoint reads ---------------------------------------------------------

    def frames_to_send(self) -> list[str]:
        """Frames produced since the last call, in order; send them as they are.

        After calling this method, send every frame before closing: ``resume_seq`` counts them
        as delivered."""
        frames, self._frames = self._frames, []
        self._batch_seqs, self._frame_seqs = self._frame_seqs, []
        self._batch_after, self._handed_through = self._handed_through, self._cursor
        return frames

    def store_query(self) -> EventQuery | None:
        """The next page to read from the store (replay or gap fill), or ``None``.

        Answer it with ``receive_stored``; pages are read in ``seq`` order."""
        return self._query if self._close is None else None

    def gap(self) -> tuple[int, int] | None:
        """The ``seq`` range ``(after, until]`` being filled from the store, if any."""
        if self._replaying or not self._reading or self._read_until is None:
            return None
        return (self._cursor, self._read_until)

    @property
    def replaying(self) -> bool:
        """True until the replay has read the store to its end."""
        return self._replaying

    @property
    def resume_seq(self) -> int:
        """The ``after_seq`` a new subscriber with the same view resumes from, missing nothing."""
        return self._cursor

    def close_code(self) -> CloseCode | None:
        """Set once the stream must end; ``close_reason`` says why."""
        return self._close

    @staticmethod
    def fed_by_bus(*, forwarding: bool, scope_subagent_id: str | None) -> bool:
        """Whether the bus carries the records of such a stream. It does not for a socket on a
        sub-agent with forwarding off (only forwarded sub-agent events are published): feed
        that stream with ``poll`` now and then instead of bus records."""
        return forwarding or scope_subagent_id is None

    # -- what the endpoint feeds ---------------------------------------------------------

    def receive_stored(self, records: list[EventRecord], *, exhausted: bool) -> None:
        """The answer to ``store_query()``: a page of records in ``seq`` order. ``exhausted``:
        the store had no more matches (the page has no ``next_page_id``).

        After calling this method, send ``frames_to_send()``, then ask ``store_query()``."""
        query = self._query
        if query is None:
            raise RuntimeError("receive_stored without an outstanding store_query()")
        self._query = None
        whole_tree = query.conversation_ids is None
        for record in records:
            self._take(record)
        if whole_tree and records:
            self._tree_known_through = max(self._tree_known_through, self._cursor)
        if exhausted:
            if query.until_seq is None:  # the replay read the store to its end
                self._finish_read()
            else:
                self._cursor = max(self._cursor, query.until_seq)
                if whole_tree:
                    self._tree_known_through = max(self._tree_known_through, query.until_seq)
        self._advance()

    def receive_live(self, record: EventRecord) -> None:
        """A record from the bus, in publish order. Any time; it waits while the store is read.

        After calling this method, send ``frames_to_send()``, then ask ``store_query()``."""
        if self._close is not None:
            return
        self._pending.append(record)
        if not self._reading:
            self._advance()

    def poll(self) -> None:
        """Read what the store holds past the cursor (see ``fed_by_bus``): ``store_query()``
        then asks for it, unless a read is already going on."""
        if self._close is None and not self._reading:
            self._reading, self._read_until = True, None
            self._advance()

    def receive_overflow(self) -> None:
        """The bus subscription overflowed: the client fell a whole queue behind. Closes with
        ``TOO_SLOW`` and the ``seq`` to resume from; frames already produced still go out."""
        if self._close is None:
            self._pending.clear()
            self._query = None
            self._close = CloseCode.TOO_SLOW
            self.close_reason = f"too slow; resume with after_seq={self._cursor}"

    def receive_stall(self, sent: int) -> None:
        """The client stopped taking data: only the first ``sent`` frames of the last
        ``frames_to_send()`` batch reached the socket. Closes with ``TOO_SLOW`` and the ``seq``
        of the last frame that went out, so a resume misses nothing and repeats nothing (also
        after ``receive_overflow``, whose last frames may be the ones that stalled)."""
        if self._close is not None and self._close is not CloseCode.TOO_SLOW:
            return
        if sent >= len(self._batch_seqs):
            resume = self._handed_through
        else:
            resume = max((s for s in self._batch_seqs[:sent] if s is not None), default=self._batch_after)
        self._pending.clear()
        self._frames, self._frame_seqs = [], []
        self._query = None
        self._cursor = resume
        self._close = CloseCode.TOO_SLOW
        self.close_reason = f"too slow; resume with after_seq={resume}"

    # -- internals -----------------------------------------------------------------------

    def _advance(self) -> None:
        """Plan the next store read, or hand out waiting bus records until one reveals a gap."""
        while self._close is None:
            if self._reading:
                if self._plan_read():
                    return
                self._finish_read()
            if self._replaying:
                # Read to the end after the snapshot: every visible record up to it is out.
                self._replaying = False
                self._cursor = max(self._cursor, self._snapshot_seq)
            if not self._pending:
                return
            record = self._pending[0]
            if record.seq is not None and record.seq > self._cursor:
                previous = record.prev_seq if record.prev_seq is not None else record.seq - 1
                if previous > self._cursor:  # the bus lost (cursor, previous]: read it first
                    self._reading, self._read_until = True, previous
                    continue
            self._pending.popleft()
            if record.seq is None:
                if self._view.sees(record.conversation_id):
                    self._frames.append(record.json)  # ephemeral: passes through, never stored
                    self._frame_seqs.append(None)
                continue
            self._take(record)
            if self._forwarding:  # the bus carries the whole tree: nothing was missed
                self._tree_known_through = max(self._tree_known_through, self._cursor)

    def _finish_read(self) -> None:
        """End the store read. Waiting deltas published before a record the read has already
        sent belong to a message the client has whole: drop them."""
        self._reading = False
        last_sent = max(
            (i for i, r in enumerate(self._pending) if r.seq is not None and r.seq <= self._cursor), default=-1
        )
        if last_sent > 0:
            kept = [r for i, r in enumerate(self._pending) if i > last_sent or r.seq is not None]
            self._pending.clear()
            self._pending.extend(kept)

    def _plan_read(self) -> bool:
        """Set the next store query of the current read; False when the read is complete."""
        while True:
            until = self._read_until
            if until is not None and self._cursor >= until:
                return False
            if self._view.kind is ViewKind.NOTHING:
                self._cursor = max(self._cursor, until or 0)
                return False
            ids = self._view.stream_ids()
            bound = until
            if self._view.dynamic:
                known = self._tree_known_through
                if self._cursor < known:
                    # The tree is complete up to `known`: read only the view's streams.
                    bound = known if until is None else min(until, known)
                    if not ids:
                        self._cursor = bound
                        continue
                else:
                    # Sub-agents may start in this range: read the whole tree and learn them
                    # in seq order, so none of their records is passed over.
                    ids = None
            self._query = EventQuery(self.root_id, conversation_ids=ids, after_seq=self._cursor, until_seq=bound)
            return True

    def _take(self, record: EventRecord) -> None:
        """Turn a stored record (from the store or the bus) into a frame if the view sees it."""
        self._view.learn_record(record)
        seq = record.seq
        if seq is None or seq <= self._cursor:
            return  # already sent (or passed over as not visible)
        if self._view.sees(record.conversation_id):
            self._frames.append(wire_json(record, self._schema))
            self._frame_seqs.append(seq)
        self._cursor = seq
