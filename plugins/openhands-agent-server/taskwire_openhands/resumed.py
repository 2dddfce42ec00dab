"""A resumed task's events, read from what OpenHands persists for it while the call runs.

OpenHands 1.58.2 builds a resumed sub-conversation (``task`` with ``resume=``) without asking the
parent's visualizer (``TaskManager._resume_task``), so it gets OpenHands' default visualizer
(which prints to stdout) and no stamped one. It persists every event it appends, though, one
file each (``<sub-agent folder>/events/event-NNNNN-<id>.json``), before any callback after it
runs. So while the resuming call runs, a thread reads the new files of that folder in order and
reports each event with the resumed sub-agent's stamp (the same ``subagent_id``, the new call as
``parent_tool_use_id``); a last read when the call returns picks up the rest. A file caught
half-written is read again on the next pass. Its own ``task`` calls are stamped live as usual.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from openhands.sdk.conversation.persistence_const import EVENTS_DIR
from openhands.sdk.event import Event

from .persisted import event_files
from .stamping import RESUMED, Stamp, StampingVisualizer, SubagentStamper, TaskCall, call_safely

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05


class ResumedTail:
    """Reports a resumed sub-agent's new events until ``stop``."""

    def __init__(self, stamper: SubagentStamper, call: TaskCall, previous: Stamp) -> None:
        self.stamper = stamper
        self.stamp = Stamp(
            parent_tool_use_id=call.tool_call_id, subagent_id=previous.subagent_id, ancestry=call.ancestry,
            parent_subagent_id=call.parent_subagent_id, subagent_type=call.subagent_type,
            label=call.description or previous.label, depth=call.depth, persistence_dir=previous.persistence_dir,
        )
        self.folder = Path(previous.persistence_dir) if previous.persistence_dir else None
        files = event_files(self.folder) if self.folder else []
        self.next_index = files[-1][0] + 1 if files else 0
        owner = StampingVisualizer(stamper, call, self.stamp.label)
        owner.stamp = self.stamp
        RESUMED[self.stamp.subagent_id] = owner
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=f"taskwire-resumed-{call.tool_call_id}", daemon=True)
        if self.folder is not None:
            self._thread.start()

    def _follow(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            self.read_new()

    def read_new(self) -> None:
        """Report the events persisted since the last read, in order."""
        assert self.folder is not None
        for index, name in event_files(self.folder):
            if index < self.next_index:
                continue
            if index > self.next_index:
                return  # a gap: the file before it is not there yet
            try:
                event = Event.model_validate_json((self.folder / EVENTS_DIR / name).read_bytes())
            except (OSError, ValueError):
                return  # caught while it was written: read it again next time
            self.next_index += 1
            call_safely("on_event", self.stamper.on_event, self.stamp, event)

    def stop(self) -> None:
        """The call returned: read what is left, stop following."""
        RESUMED.pop(self.stamp.subagent_id, None)
        if self.folder is None:
            return
        self._stopped.set()
        self._thread.join()
        self.read_new()
