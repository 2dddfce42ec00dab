"""AG-UI's ``RunAgentInput``, as taskwire reads it, without I/O.

Only what a run needs is interpreted: ``threadId`` (the conversation id), ``runId``, the newest
user message of ``messages``, ``forwardedProps.taskwire.agent`` (the agent of a new
conversation) and ``resume`` (answers to interrupts; taskwire asks none yet). ``tools``,
``context`` and ``state`` are accepted and not used: the agent's tools are the server's, and
the AG-UI state belongs to the frontend.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from .interrupts import answer_of
from ..errors import BadRequest, InvalidBody
from ..specs import AgentSpec

THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A thread id names a conversation and its workspace folder: no separators, no leading dot."""

_agent_spec: TypeAdapter[Any] = TypeAdapter(AgentSpec)


class _Input(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class InputMessage(_Input):
    """One message of ``messages`` (any role; only user messages are read)."""

    id: str = Field(min_length=1, max_length=200)
    role: Literal["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]
    content: str | list[dict[str, Any]] | dict[str, Any] | None = None
    """Text, content parts (``{"type": "text", "text": ...}``, images ...), or an activity's object."""

    def text(self) -> str:
        """The message's text: the string, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            parts = [p.get("text") for p in self.content if p.get("type") == "text"]
            return "\n".join(p for p in parts if isinstance(p, str))
        return ""


_OPTION = {"type": "string", "minLength": 1, "maxLength": 200}
_REASON = {"type": "string", "maxLength": 4000}


def _answer(**fields: Any) -> dict[str, Any]:
    required = [name for name in fields if name not in ("always", "reason")]
    return {"type": "object", "additionalProperties": False, "required": required, "properties": {**fields, "reason": _REASON}}


_RESUME_FORMS = {
    # What ``interrupts.answer_of`` takes, said in the document: a cancelled entry needs no
    # payload; a resolved one names the option (bare, optionId, option_id) or a decision.
    "oneOf": [
        {"properties": {"status": {"const": "cancelled"}}},
        {
            "required": ["payload"],
            "properties": {
                "status": {"const": "resolved"},
                "payload": {
                    "oneOf": [
                        _OPTION,
                        _answer(optionId=_OPTION),
                        _answer(option_id=_OPTION),
                        _answer(decision={"enum": ["allow", "reject"]}, always={"type": "boolean"}),
                    ]
                },
            },
        },
    ]
}


class ResumeEntry(_Input):
    """An answer to one interrupt of the previous run."""

    model_config = ConfigDict(json_schema_extra=_RESUME_FORMS)

    interrupt_id: str = Field(min_length=1, max_length=200)
    """The interrupt's ``id``: a taskwire permission ``request_id``."""
    status: Literal["resolved", "cancelled"]
    payload: Any = None
    """The answer: the chosen option (``interrupts.answer_of`` says which forms)."""


class RunAgentInput(_Input):
    """The body of ``POST /agui``."""

    thread_id: str = Field(max_length=128, json_schema_extra={"pattern": THREAD_ID.pattern})
    run_id: str = Field(min_length=1, max_length=200)
    parent_run_id: str | None = Field(default=None, max_length=200)
    protocol_version: str | None = None
    state: Any = None
    messages: list[InputMessage]
    tools: list[Any] = Field(default_factory=list)
    context: list[Any] = Field(default_factory=list)
    forwarded_props: Any = None
    resume: list[ResumeEntry] | None = Field(default=None, description="At most one entry per interruptId.")

    @classmethod
    def parse(cls, body: bytes) -> RunAgentInput:
        """Parse and check a request body. Raises ``InvalidBody`` (422,
        ``invalid_run_agent_input``) naming the first problem, or ``BadRequest`` (400) for a
        well-formed input taskwire cannot run."""
        try:
            run_input = cls.model_validate_json(body)
        except ValidationError as exc:
            raise InvalidBody(_first_problem(exc), code="invalid_run_agent_input") from exc
        if not THREAD_ID.match(run_input.thread_id):
            raise InvalidBody(
                "threadId: letters, digits, '.', '_' and '-' only (up to 128, not starting with '.' or '-')",
                code="invalid_run_agent_input",
            )
        version = run_input.protocol_version
        if version is not None and version.split(".")[0] != "1":
            raise BadRequest(
                f"protocolVersion {version!r} is not served here; this server speaks AG-UI 1.x",
                code="unsupported_protocol_version",
            )
        return run_input

    def resume_answers(self) -> list[tuple[str, dict[str, Any]]]:
        """``resume`` as ``(request_id, PermissionAnswer body)`` pairs, in order. ``InvalidBody``
        (422, ``invalid_resume``) for an entry answered twice or a payload that is no answer."""
        answers: dict[str, dict[str, Any]] = {}
        for entry in self.resume or []:
            if entry.interrupt_id in answers:
                raise InvalidBody(f"resume answers interrupt {entry.interrupt_id!r} twice", code="invalid_resume")
            answers[entry.interrupt_id] = answer_of(entry.status, entry.payload)
        return list(answers.items())

    def newest_user_text(self) -> str:
        """The text of the last user message: what this run sends to the conversation."""
        user = next((m for m in reversed(self.messages) if m.role == "user"), None)
        if user is None:
            raise BadRequest("messages holds no user message to send", code="no_user_message")
        text = user.text()
        if not text.strip():
            raise BadRequest(f"user message {user.id!r} holds no text", code="empty_user_message")
        return text

    def agent(self) -> dict[str, Any] | None:
        """``forwardedProps.taskwire.agent``, validated like ``POST /api/conversations``'s
        ``agent`` (``None`` when absent: the server's default agent)."""
        props = self.forwarded_props
        taskwire = props.get("taskwire") if isinstance(props, dict) else None
        if taskwire is None:
            return None
        if not isinstance(taskwire, dict):
            raise InvalidBody("forwardedProps.taskwire must be an object", code="invalid_agent")
        spec = taskwire.get("agent")
        if spec is None:
            return None
        try:
            return _agent_spec.validate_python(spec).model_dump(exclude_none=True)
        except ValidationError as exc:
            raise InvalidBody(f"forwardedProps.taskwire.agent: {_first_problem(exc)}", code="invalid_agent") from exc


def run_input_schema() -> dict[str, Any]:
    """The JSON schema of ``RunAgentInput`` as clients write it (camelCase), whole: no
    ``$ref``, so it can sit inside another document."""
    schema = RunAgentInput.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(definitions[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
