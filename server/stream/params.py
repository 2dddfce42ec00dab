"""A live subscriber's query parameters, checked once: ``resend_mode``, ``after_seq``,
``subagents``, ``parent_tool_use_id``, ``event_schema``."""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import BadRequest
from .schema import CURRENT_SCHEMA
from .view import SubagentsParam


class StreamParams(BaseModel):
    """What a subscriber asks for. Unknown parameters are ignored (``session_api_key`` rides along)."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    resend_mode: Literal["all", "since"] | None = None
    """``all``: replay from the start; ``since``: after ``after_seq`` (default when it is given;
    without it, from the log's end as the socket opens: live only)."""
    after_seq: int | None = Field(default=None, ge=0)
    """Resume after this ``seq``."""
    subagents: SubagentsParam = "all"
    """``none``: the conversation's own stream only, even with forwarding on."""
    parent_tool_use_id: str | None = Field(default=None, min_length=1, max_length=200)
    """Only the sub-agent spawned by this tool call and every sub-agent below it."""
    event_schema: int = Field(default=CURRENT_SCHEMA, ge=1, le=CURRENT_SCHEMA)
    """1: ``cancelled`` tool calls are sent as ``failed``."""

    @model_validator(mode="after")
    def _consistent(self) -> StreamParams:
        if self.resend_mode == "all" and self.after_seq is not None:
            raise ValueError("after_seq contradicts resend_mode=all; use resend_mode=since")
        if self.subagents == "none" and self.parent_tool_use_id is not None:
            raise ValueError("parent_tool_use_id contradicts subagents=none")
        return self

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> StreamParams:
        """Parse query parameters; raises ``BadRequest`` naming the first problem."""
        try:
            return cls.model_validate(dict(query))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            message = error["msg"].removeprefix("Value error, ")
            raise BadRequest(f"{where}: {message}" if where else message, code="invalid_query") from exc

    def start_after(self, log_end: int) -> int:
        """The ``seq`` to replay after, given the log's last ``seq`` as the socket opens. An
        ``after_seq`` past the end means "from the end": no client can have seen a seq the
        store had not assigned yet (records are published after they are durable)."""
        if self.resend_mode == "all":
            return 0
        if self.after_seq is not None:
            return min(self.after_seq, log_end)
        return log_end if self.resend_mode == "since" else 0
