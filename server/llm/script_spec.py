"""What a script is, as written: lanes, turns, match conditions, validated by pydantic (see
``docs/scripted-llm.md``); and ``ScriptRequest``, the part of a request that selects an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .presets import PRESETS

_LANE_NAME = r"^[A-Za-z0-9_-]+$"


class ScriptToolCall(BaseModel):
    """One tool call of a turn; several in one turn are parallel calls."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    """Default: ``<prefix>_<lane>_<turn>_<n>`` (prefix ``toolu`` for Anthropic, else ``call``)."""


class ScriptUsage(BaseModel):
    """Fixed usage figures for a turn or a whole script."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    """Sent as Anthropic's ``cache_creation_input_tokens`` (OpenAI's dialect has no such figure)."""


class ScriptTurn(BaseModel):
    """One model answer: text, tool calls, or a failure."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    """The answer's text; ``""`` is an empty answer (a model that stays silent)."""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    delay: float = Field(default=0.0, ge=0)
    """Seconds to wait before answering."""
    error: str | None = None
    """The model fails with this message (HTTP ``status`` over HTTP, ``LLMError`` in process)."""
    status: int = Field(default=500, ge=400, le=599)
    """HTTP status of an ``error`` turn."""
    retry_after: float | None = Field(default=None, ge=0, le=3600)
    """An ``error`` turn's ``Retry-After`` header, in seconds (over HTTP)."""
    fault: Literal["reset", "stall", "cut"] | None = None
    """Over HTTP, how the answer goes wrong: ``reset`` drops the connection before answering;
    ``stall`` sends the first half of the answer's stream and then nothing (until the client
    hangs up); ``cut`` sends the first half and ends the stream there. In process, any fault
    is an ``LLMError``."""
    fail_times: int | None = Field(default=None, ge=1)
    """Fail (``error`` or ``fault``) only the first N times this turn is asked for, then
    answer normally."""
    usage: ScriptUsage | None = None

    @model_validator(mode="after")
    def _says_something(self) -> ScriptTurn:
        answers = self.text is not None or bool(self.tool_calls)
        if not (answers or self.error):
            raise ValueError("a turn needs `text`, `tool_calls` or `error`")
        if self.error and self.fault:
            raise ValueError("a turn has `error` or `fault`, not both")
        if self.fault and not answers:
            raise ValueError("`fault` needs the answer it breaks (`text` or `tool_calls`)")
        if self.fail_times is not None and not ((self.error or self.fault) and answers):
            raise ValueError("`fail_times` needs `error` or `fault`, and an answer (`text` or `tool_calls`)")
        return self


class RandomFaults(BaseModel):
    """A share of all requests answered with an error status before any turn is chosen, at
    random (seeded), for load tests of a provider that rate-limits."""

    model_config = ConfigDict(extra="forbid")

    share: float = Field(gt=0, le=1)
    """The share of requests answered so (0.1: about one in ten)."""
    status: int = Field(default=429, ge=400, le=599)
    retry_after: float | None = Field(default=None, ge=0, le=3600)
    """The ``Retry-After`` header sent with them, in seconds."""
    seed: int = 0


class LaneMatch(BaseModel):
    """What a request must contain to follow a lane; every given condition must hold."""

    model_config = ConfigDict(extra="forbid")

    first_user_contains: str | None = None
    first_user_ends_with: str | None = None
    """Compared with trailing whitespace stripped on both sides."""
    first_user_equals: str | None = None
    last_user_contains: str | None = None
    system_contains: str | None = None
    has_tool: str | None = None
    """The request offers a tool of this name."""

    @model_validator(mode="after")
    def _not_empty(self) -> LaneMatch:
        if not any(v is not None for v in self.model_dump().values()):
            raise ValueError("`match` needs at least one condition (omit it for the default lane)")
        return self

    def accepts(self, request: ScriptRequest) -> bool:
        first = request.first_user
        checks = (
            (self.first_user_contains, lambda v: v in first),
            (self.first_user_ends_with, lambda v: first.rstrip().endswith(v.rstrip())),
            (self.first_user_equals, lambda v: first.strip() == v.strip()),
            (self.last_user_contains, lambda v: v in request.last_user),
            (self.system_contains, lambda v: v in request.system),
            (self.has_tool, lambda v: v in request.tools),
        )
        return all(check(value) for value, check in checks if value is not None)


class Lane(BaseModel):
    """One agent's part of the script."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_LANE_NAME)
    match: LaneMatch | None = None
    """Omitted: the default lane, for requests no other lane matches (the main agent)."""
    turns: list[ScriptTurn] = Field(min_length=1)
    repeat: bool = False
    """Answer every request with the last turn once the others are used (side requests)."""
    optional: bool = False
    """Never reported by ``unused_steps`` (side requests a client may or may not make)."""


class ScriptSpec(BaseModel):
    """A whole script as written."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    presets: list[str] = Field(default_factory=list)
    """Named sets of lanes put before the script's own (``server/llm/presets.py``); a lane of
    the script with the same name replaces the preset's."""
    strict: bool = False
    """A request with no turn for it (no lane matches, or its lane is used up) is an error
    (``LLMError``; a 400 over HTTP). Default: it gets a plain reply saying it is unscripted, and
    the run ends normally, so a follow-up message to a demo is answered."""
    usage: Literal["derived"] | ScriptUsage = "derived"
    """``derived`` (from text lengths, about 4 characters a token) or fixed figures."""
    random_faults: RandomFaults | None = None
    """Over HTTP only: answer a random share of requests with an error status."""
    lanes: list[Lane] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _expand_presets(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("presets"):
            return data
        unknown = [p for p in data["presets"] if p not in PRESETS]
        if unknown:
            raise ValueError(f"unknown presets {unknown}; known: {', '.join(sorted(PRESETS))}")
        own = [lane for lane in data.get("lanes") or [] if isinstance(lane, dict)]
        names = {lane.get("name") for lane in own}
        extra = [
            lane for preset in data["presets"] for lane in PRESETS[preset] if lane["name"] not in names
        ]
        return {**data, "lanes": extra + list(data.get("lanes") or [])}

    @model_validator(mode="after")
    def _lanes_are_distinct(self) -> ScriptSpec:
        names = [lane.name for lane in self.lanes]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"lane names must be unique; repeated: {', '.join(duplicated)}")
        if sum(lane.match is None for lane in self.lanes) > 1:
            raise ValueError("at most one lane may omit `match` (the default lane)")
        return self


@dataclass(frozen=True)
class ScriptRequest:
    """The parts of a request that select the answer, dialect-neutral."""

    system: str
    """The system prompt, with any system-role messages appended."""
    first_user: str
    """The text of the first user message (its text blocks joined by newlines)."""
    last_user: str
    """The text of the last user message."""
    assistant_turns: int
    """Assistant turns in the history; consecutive assistant messages count as one."""
    tools: tuple[str, ...] = ()
    prompt_chars: int = 0
    """Characters of all the request's text, for derived usage."""
