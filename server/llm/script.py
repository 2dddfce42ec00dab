"""The scripted model's script: format, loading, and stateless lane/turn selection.

A script is YAML (see ``docs/scripted-llm.md``): a list of *lanes*, each a list of *turns*.
A request picks its lane by what it contains (the first user message, the system prompt, the
tools offered) and its turn by how many assistant turns its history already holds, so parallel
sub-agents that interleave their requests each follow their own lane without shared cursors.

This module does no I/O besides reading a script file: ``ScriptedLLM`` (in process) and the
mock server (over HTTP, both dialects) turn a request into a ``ScriptRequest``, ask
``Script.select`` for the ``ScriptStep`` to answer with, and render it.

A script file named in a request is read only under the given ``roots`` (the config folder
and the workspace roots), only if it is a regular file of at most ``MAX_SCRIPT_BYTES``, and an
error about it never quotes the file: ``script: /etc/shadow`` tells a client nothing about
``/etc/shadow`` but that it is not a script it may use.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from ..confined_files import Roots, read_confined
from ..errors import LLMError
from ..events import Usage
from .base import ToolCall
from .script_spec import Lane, RandomFaults, ScriptRequest, ScriptSpec, ScriptTurn, ScriptUsage

__all__ = ["Script", "ScriptRequest", "ScriptSpec", "ScriptStep", "canonical_json", "count_assistant_turns", "text_chunks"]

UNSCRIPTED_REPLY = (
    "(scripted demo model: no script for this message; set OH_LLM_API and OH_LLM_API_KEY "
    "to use a real model)"
)
"""The answer to a request a lenient script has no turn for."""

MAX_SCRIPT_BYTES = 8 * 1024 * 1024
"""The largest script file read."""


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
    retry_after: float | None = None
    fault: str | None = None
    """``reset``, ``stall`` or ``cut`` (see ``ScriptTurn.fault``), this time."""
    usage: Usage = field(default_factory=Usage)

    @property
    def response_id(self) -> str:
        """A deterministic id for the answer, unique per lane and turn."""
        return f"{self.lane}_{self.turn}"


@functools.lru_cache(maxsize=64)
def _parse(text: str, origin: str, *, from_file: bool) -> ScriptSpec:
    """Parse and validate a script's text; cached, because every conversation of a scripted
    tree (each sub-agent) loads the same script, and a specification is never changed.

    ``from_file``: say where the text is wrong, never what it holds (YAML's messages quote it),
    and tell a file that is no script at all only that it is not one."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = f"not valid YAML{where}" if from_file else f"not valid YAML: {exc}"
        raise LLMError(f"invalid script ({origin}): {reason}", code="invalid_script") from None
    if not isinstance(data, Mapping) or (from_file and "lanes" not in data):
        raise LLMError(f"invalid script ({origin}): expected a mapping with `lanes`", code="invalid_script")
    return _validate(data, origin)


def _validate(data: Mapping[str, Any], origin: str) -> ScriptSpec:
    try:
        return ScriptSpec.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'script'}: {err['msg']}" for err in exc.errors()
        )
        raise LLMError(f"invalid script ({origin}): {problems}", code="invalid_script") from None


class Script:
    """A loaded script and the record of which steps were served.

    ``select`` is synchronous and never awaits, so concurrent requests on one event loop see
    consistent counters.
    """

    def __init__(self, spec: ScriptSpec) -> None:
        self.spec = spec
        self._served: dict[tuple[str, int], int] = {}
        self.failures: list[str] = []
        """Requests a ``strict`` script could not answer (exhausted lanes, no matching lane)."""
        self.unscripted: list[str] = []
        """Requests a lenient script had no turn for, answered with ``UNSCRIPTED_REPLY``."""
        faults = spec.random_faults
        self._fault_draws = random.Random(faults.seed) if faults is not None else None

    def random_fault(self) -> RandomFaults | None:
        """The script's ``random_faults`` if this request is one of its share, else ``None``."""
        faults = self.spec.random_faults
        if faults is None or self._fault_draws is None or self._fault_draws.random() >= faults.share:
            return None
        return faults

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any] | Script, *, roots: Roots = None) -> Script:
        """Load from a file path, inline YAML text, or an already-parsed mapping. ``roots``:
        a file must lie under one of them (``None``: anywhere; for the operator's own files).

        Raises ``LLMError`` with a readable reason and a code: ``script_not_found``,
        ``script_outside_roots``, ``script_unreadable``, ``invalid_script``.
        """
        if isinstance(source, Script):
            return source
        if isinstance(source, Mapping):
            return cls._from_data(source, origin="inline script")
        if _is_inline(source):
            return cls(_parse(str(source), "inline script", from_file=False))
        path = Path(source)
        return cls(_parse(_read_file(path, roots), str(path), from_file=True))

    @classmethod
    def _from_data(cls, data: Mapping[str, Any], *, origin: str) -> Script:
        return cls(_validate(data, origin))

    def select(self, request: ScriptRequest, *, id_prefix: str = "call") -> ScriptStep:
        """The step answering ``request``. When no lane matches or the lane has no turn left,
        a ``strict`` script raises ``LLMError`` (recorded in ``failures``); any other answers
        with ``UNSCRIPTED_REPLY``."""
        lane = self._lane_for(request)
        index = request.assistant_turns
        if lane is None:
            first = request.first_user[-120:]
            return self._unscripted("unscripted", index, request, f"no lane matches this request (first user message ends {first!r})")
        if index >= len(lane.turns):
            if not lane.repeat:
                return self._unscripted(lane.name, index, request, f"script exhausted for lane {lane.name} at turn {index}")
            index = len(lane.turns) - 1
        turn = lane.turns[index]
        key = (lane.name, index)
        times = self._served.get(key, 0)
        self._served[key] = times + 1
        failing = (turn.error is not None or turn.fault is not None) and (
            turn.fail_times is None or times < turn.fail_times
        )
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
            # A fault breaks the answer on its way (half of it is sent); an error replaces it.
            text="" if failing and turn.error is not None else (turn.text or ""),
            tool_calls=[] if failing and turn.error is not None else calls,
            delay=turn.delay,
            error=turn.error if failing else None,
            status=turn.status,
            retry_after=turn.retry_after,
            fault=turn.fault if failing else None,
            usage=self._usage(turn, request, calls),
        )

    def _lane_for(self, request: ScriptRequest) -> Lane | None:
        default = None
        for lane in self.spec.lanes:
            if lane.match is None:
                default = lane
            elif lane.match.accepts(request):
                return lane
        return default

    def _unscripted(self, lane: str, turn: int, request: ScriptRequest, reason: str) -> ScriptStep:
        """A request the script has no turn for: an error when the script is ``strict``, else
        a plain reply that ends the run (recorded in ``unscripted``)."""
        if self.spec.strict:
            self._fail(reason)
        self.unscripted.append(reason)
        answer = ScriptTurn(text=UNSCRIPTED_REPLY)
        return ScriptStep(lane=lane, turn=turn, text=UNSCRIPTED_REPLY, usage=self._usage(answer, request, []))

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
            "unscripted": list(self.unscripted),
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


def _is_inline(source: str | Path) -> bool:
    # A string with a newline (or a flow mapping) is a script itself; anything else names a file.
    return isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{"))


def _read_file(path: Path, roots: Roots) -> str:
    """The text of a script file, read as ``Script.load`` promises."""
    return read_confined(
        path, roots, what="script", limit=MAX_SCRIPT_BYTES,
        hint="name a file under them or send the script inline",
        refuse=lambda detail, code: LLMError(detail, code=code),
    )


def text_chunks(text: str, pieces: int = 3) -> list[str]:
    """``text`` cut into at most ``pieces`` fragments at word boundaries, for streaming."""
    if not text:
        return []
    words = re.split(r"(?<=\s)", text)
    size = max(1, -(-len(words) // pieces))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]
