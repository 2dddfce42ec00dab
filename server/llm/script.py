"""The scripted model's script: format, loading, and stateless lane/turn selection.

A script is YAML (see ``docs/scripted-llm.md``): a list of *lanes*, each a list of *turns*.
A request picks its lane by what it contains (the first user message, the system prompt, the
tools offered) and its turn by how many assistant turns its history already holds, so parallel
sub-agents that interleave their requests each follow their own lane without shared cursors.

This module does no I/O besides reading a script file: ``ScriptedLLM`` (in process) and the
mock server (over HTTP, both dialects) turn a request into a ``ScriptRequest``, ask
``Script.select`` for the ``ScriptStep`` to answer with, and render it.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from server.errors import LLMError
from server.events import Usage
from server.llm.base import ToolCall
from server.llm.presets import PRESETS

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
    fail_times: int | None = Field(default=None, ge=1)
    """Fail only the first N times this turn is asked for, then answer normally."""
    usage: ScriptUsage | None = None

    @model_validator(mode="after")
    def _says_something(self) -> ScriptTurn:
        answers = self.text is not None or bool(self.tool_calls)
        if not (answers or self.error):
            raise ValueError("a turn needs `text`, `tool_calls` or `error`")
        if self.fail_times is not None and not (self.error and answers):
            raise ValueError("`fail_times` needs `error` and an answer (`text` or `tool_calls`)")
        return self


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
    usage: Literal["derived"] | ScriptUsage = "derived"
    """``derived`` (from text lengths, about 4 characters a token) or fixed figures."""
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


@dataclass(frozen=True)
class ScriptStep:
    """The answer chosen for one request."""

    lane: str
    turn: int
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    delay: float = 0.0
    error: str | None = None
    status: int = 500
    usage: Usage = field(default_factory=Usage)

    @property
    def response_id(self) -> str:
        """A deterministic id for the answer, unique per lane and turn."""
        return f"{self.lane}_{self.turn}"


@functools.lru_cache(maxsize=64)
def _parse(text: str, origin: str) -> ScriptSpec:
    """Parse and validate a script's text; cached, because every conversation of a scripted
    tree (each sub-agent) loads the same script, and a specification is never changed."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise LLMError(f"invalid script ({origin}): not valid YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise LLMError(f"invalid script ({origin}): expected a mapping with `lanes`")
    return _validate(data, origin)


def _validate(data: Mapping[str, Any], origin: str) -> ScriptSpec:
    try:
        return ScriptSpec.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'script'}: {err['msg']}" for err in exc.errors()
        )
        raise LLMError(f"invalid script ({origin}): {problems}") from exc


class Script:
    """A loaded script and the record of which steps were served.

    ``select`` is synchronous and never awaits, so concurrent requests on one event loop see
    consistent counters.
    """

    def __init__(self, spec: ScriptSpec) -> None:
        self.spec = spec
        self._served: dict[tuple[str, int], int] = {}
        self.failures: list[str] = []
        """Requests the script could not answer (exhausted lanes, no matching lane)."""

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any] | Script) -> Script:
        """Load from a file path, inline YAML text, or an already-parsed mapping.

        Raises ``LLMError`` with a readable reason for a missing file or an invalid script.
        """
        if isinstance(source, Script):
            return source
        if isinstance(source, Mapping):
            return cls._from_data(source, origin="inline script")
        text, origin = _read_source(source)
        return cls(_parse(text, origin))

    @classmethod
    def _from_data(cls, data: Mapping[str, Any], *, origin: str) -> Script:
        return cls(_validate(data, origin))

    def select(self, request: ScriptRequest, *, id_prefix: str = "call") -> ScriptStep:
        """The step answering ``request``. Raises ``LLMError`` when no lane matches or the
        lane has no turn left (recorded in ``failures``)."""
        lane = self._lane_for(request)
        index = request.assistant_turns
        if index >= len(lane.turns):
            if not lane.repeat:
                self._fail(f"script exhausted for lane {lane.name} at turn {index}")
            index = len(lane.turns) - 1
        turn = lane.turns[index]
        key = (lane.name, index)
        times = self._served.get(key, 0)
        self._served[key] = times + 1
        failing = turn.error is not None and (turn.fail_times is None or times < turn.fail_times)
        calls = [
            ToolCall(
                id=call.id or f"{id_prefix}_{lane.name}_{index}_{n}",
                name=call.name,
                arguments=copy.deepcopy(call.arguments),  # the caller may keep and change it
            )
            for n, call in enumerate(turn.tool_calls)
        ]
        return ScriptStep(
            lane=lane.name,
            turn=index,
            text="" if failing else (turn.text or ""),
            tool_calls=[] if failing else calls,
            delay=turn.delay,
            error=turn.error if failing else None,
            status=turn.status,
            usage=self._usage(turn, request, calls),
        )

    def _lane_for(self, request: ScriptRequest) -> Lane:
        default = None
        for lane in self.spec.lanes:
            if lane.match is None:
                default = lane
            elif lane.match.accepts(request):
                return lane
        if default is None:
            first = request.first_user[-120:]
            self._fail(f"no lane matches this request (first user message ends {first!r})")
        return default

    def _fail(self, reason: str) -> NoReturn:
        self.failures.append(reason)
        raise LLMError(reason, code="script_error")

    def _usage(self, turn: ScriptTurn, request: ScriptRequest, calls: list[ToolCall]) -> Usage:
        fixed = turn.usage or (self.spec.usage if isinstance(self.spec.usage, ScriptUsage) else None)
        if fixed is not None:
            return Usage(**fixed.model_dump(), llm_calls=1)
        answer_chars = len(turn.text or "") + sum(
            len(c.name) + len(canonical_json(c.arguments)) for c in calls
        )
        return Usage(
            input_tokens=max(1, request.prompt_chars // 4),
            output_tokens=max(1, answer_chars // 4),
            llm_calls=1,
        )

    def unused_steps(self) -> list[tuple[str, int]]:
        """``(lane, turn)`` pairs never served, optional lanes left out. A finished test
        expects none."""
        return [
            (lane.name, index)
            for lane in self.spec.lanes
            if not lane.optional
            for index in range(len(lane.turns))
            if (lane.name, index) not in self._served
        ]

    def status(self) -> dict[str, Any]:
        """What was served, what was not, and what failed, as JSON-ready data."""
        return {
            "unused": [{"lane": lane, "turn": turn} for lane, turn in self.unused_steps()],
            "failures": list(self.failures),
            "served": [
                {"lane": lane, "turn": turn, "times": times}
                for (lane, turn), times in sorted(self._served.items())
            ],
        }


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: the one stable serialization for derived figures."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def count_assistant_turns(roles: list[str]) -> int:
    """Assistant turns in a history: runs of consecutive ``assistant`` roles count once."""
    turns = 0
    previous = None
    for role in roles:
        if role == "assistant" and previous != "assistant":
            turns += 1
        previous = role
    return turns


def _read_source(source: str | Path) -> tuple[str, str]:
    # A string with a newline (or a flow mapping) is a script itself; anything else names a file.
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source, "inline script"
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError as exc:
        raise LLMError(f"script file not found: {path}") from exc
    except OSError as exc:
        raise LLMError(f"cannot read script {path}: {exc}") from exc



def text_chunks(text: str, pieces: int = 3) -> list[str]:
    """``text`` cut into at most ``pieces`` fragments at word boundaries, for streaming."""
    if not text:
        return []
    words = re.split(r"(?<=\s)", text)
    size = max(1, -(-len(words) // pieces))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]
