"""``TextLane``: the model text of one stream (the root's, or a sub-agent's) as ACP
``agent_message_chunk`` texts, without I/O.

Deltas go out as they stream; the stored text then adds only what they did not carry. ACP has
no way to take text back, so when a model call is retried after its failed attempt streamed
some text, the lane keeps what the client already shows and sends of the retry's deltas only
what goes past it: the same answer streamed again is never shown twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEPARATOR = "\n\n"
"""Between two texts of one lane with no tool call between them (a client joins chunks)."""
_SPACE = re.compile(r"\s+")


@dataclass(slots=True)
class TextLane:
    """The text state of one stream."""

    streamed: str = ""
    """Delta text sent since the lane's last stored text."""
    broken: bool = False
    """Deltas may have been lost (the feed resumed): send none until the next stored text."""
    text_open: bool = False
    """The lane's last update was text: a new text starts with ``SEPARATOR``."""
    retrying: bool = False
    """A retried call streams again what ``streamed`` already showed: deltas catch up first."""
    again: str = ""
    """What the retried call has streamed so far (while ``retrying``)."""

    def delta(self, text: str) -> str:
        """The text to send for a delta ('' for none)."""
        if self.broken:
            return ""
        if self.retrying:
            return self._catch_up(text)
        prefix = SEPARATOR if not self.streamed and self.text_open else ""
        self.streamed += text
        self.text_open = True
        return prefix + text

    def retried(self) -> None:
        """The call whose text streamed is tried again: its deltas restart from nothing."""
        if self.streamed:
            self.retrying, self.again = True, ""

    def _catch_up(self, text: str) -> str:
        self.again += text
        if self.streamed.startswith(self.again):
            return ""  # the client shows this already
        self.retrying = False
        if self.again.startswith(self.streamed):
            rest, self.streamed = self.again[len(self.streamed):], self.again
            return rest
        self.streamed = self.again  # another answer: it follows what is shown, set apart
        return SEPARATOR + self.again

    def stored(self, text: str) -> str:
        """The text to send for stored text (a whole message): what deltas did not carry."""
        streamed, self.streamed, self.broken = self.streamed, "", False
        retrying, self.retrying = self.retrying, False
        if not streamed:
            rest = (SEPARATOR if self.text_open else "") + text
        elif text.startswith(streamed):
            rest = text[len(streamed):]
        elif _SPACE.sub("", text) == _SPACE.sub("", streamed):
            rest = ""  # the same text, spaced otherwise (a bridged agent joins its segments)
        elif retrying and streamed.startswith(text):
            rest = ""  # the failed attempt showed more than the answer: ACP cannot take it back
        else:
            rest = SEPARATOR + text
        if rest:
            self.text_open = True
        return rest

    def ended(self) -> None:
        """The run ended: text cut short by the end is not coming."""
        self.streamed, self.broken, self.retrying = "", False, False
