"""Request and response bodies of the REST API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from ..events import Usage
from ..specs import AgentSpec, NativeAgentSpec, redact
from ..store import ConversationRecord


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # "left out", which the schema's type cannot say


class CreateConversation(BaseModel):
    """``POST /api/conversations``. Every field may be omitted."""

    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as written: no 0 for false

    agent: AgentSpec = Field(default_factory=NativeAgentSpec)
    workspace: str | None = None
    """A folder for the agent, under ``OH_WORKSPACE_PATH`` (a relative name is taken from there)
    or one of ``OH_WORKSPACE_ROOTS``; default a fresh one under ``OH_WORKSPACE_PATH``. Outside
    them, or a name no folder can have: 400 ``invalid_workspace`` (the rule is
    ``runtime/workspaces.py``'s alone)."""
    initial_message: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=_no_default)
    """The first user message. Leave it out (``null`` is refused) to create the conversation idle."""
    run: bool | None = None
    """Start working on ``initial_message`` at once (default: whenever there is one). A
    conversation without a message is created ``idle``; ``run: true`` without one is a 400."""

    @field_validator("initial_message", mode="before")
    @classmethod
    def _text_or_left_out(cls, value: Any) -> Any:
        if value is None:  # only an explicit null gets here: a default is not validated
            raise ValueError("must be text; leave it out to create the conversation idle")
        return value


class SendMessage(BaseModel):
    """``POST /api/conversations/{id}/events``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    role: str = Field(default="user", pattern="^user$")
    content: str = Field(min_length=1)
    run: bool = True


class SteerMessage(BaseModel):
    """``POST /api/conversations/{id}/subagents/{subagent_id}/messages``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    content: str = Field(min_length=1)
    """The message, as the sub-agent's model reads it (a user message)."""


class ConversationInfo(BaseModel):
    """A conversation as the API shows it."""

    id: str
    status: str
    status_reason: str | None = None
    """Why the status is what it is when neither the run nor a person chose it: a run the store
    stopped is ``paused`` with the store's reason, until it resumes by itself."""
    created_at: datetime
    updated_at: datetime
    agent: dict[str, Any]
    last_seq: int
    workspace: str | None = None
    title: str | None = None
    usage: Usage
    root_id: str
    parent_id: str | None = None
    parent_tool_use_id: str | None = None

    @classmethod
    def of(cls, record: ConversationRecord, last_seq: int) -> ConversationInfo:
        return cls(
            id=record.id,
            status=record.status,
            status_reason=record.status_reason,
            created_at=record.created_at,
            updated_at=record.updated_at,
            agent=redact(record.agent),
            last_seq=last_seq,
            workspace=record.workspace,
            title=record.title,
            usage=record.usage,
            root_id=record.root_id,
            parent_id=record.parent_id,
            parent_tool_use_id=record.parent_tool_use_id,
        )


class ConversationPage(BaseModel):
    items: list[ConversationInfo]
    next_page_id: str | None = None
