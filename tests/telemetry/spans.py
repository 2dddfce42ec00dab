"""Spans as a test reads them back, from any backend, and the checks on their tree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Span:
    """One span: hex ids, name, flat attributes, status (``UNSET``, ``OK``, ``ERROR``)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    attributes: dict[str, Any]
    status: str

    @property
    def operation(self) -> str | None:
        return self.attributes.get("gen_ai.operation.name")


def from_span_data(spans: Iterable[Any]) -> list[Span]:
    """``SpanData`` of the span builder, as a backend would show them."""
    return [
        Span(
            trace_id=f"{s.trace_id:032x}",
            span_id=f"{s.span_id:016x}",
            parent_id=f"{s.parent_span_id:016x}" if s.parent_span_id is not None else None,
            name=s.name,
            attributes=dict(s.attributes),
            status="ERROR" if s.error is not None else "UNSET",
        )
        for s in spans
    ]


def from_phoenix(items: Iterable[dict[str, Any]]) -> list[Span]:
    """Spans as Phoenix's REST API (``GET /v1/projects/{project}/spans``) returns them."""
    return [
        Span(
            trace_id=item["context"]["trace_id"],
            span_id=item["context"]["span_id"],
            parent_id=item.get("parent_id"),
            name=item["name"],
            attributes=item.get("attributes") or {},
            status=str(item.get("status_code", "UNSET")).upper(),
        )
        for item in items
    ]


def check_tree(spans: list[Span], conversation_id: str, subagents: list[dict[str, Any]]) -> dict[str, Span]:
    """What a trace viewer must show for one run of ``conversation_id``, whose sub-agents are
    ``subagents`` (``GET /api/conversations/{id}/subagents``): one trace, one root, and each
    sub-agent's ``invoke_agent`` span under the ``execute_tool`` span of the call that spawned
    it, itself in the spawning agent's span. Returns each sub-agent's span by its id."""
    assert len({s.trace_id for s in spans}) == 1, "one trace for the run"
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans), "span ids are unique"
    roots = [s for s in spans if s.parent_id is None]
    assert len(roots) == 1, [s.name for s in roots]
    root = roots[0]
    assert root.operation == "invoke_agent" and root.attributes["gen_ai.conversation.id"] == conversation_id
    orphans = [s.name for s in spans if s.parent_id is not None and s.parent_id not in by_id]
    assert not orphans, f"spans whose parent is missing: {orphans}"
    agents = {s.attributes["gen_ai.agent.id"]: s for s in spans if s.operation == "invoke_agent" and s is not root}
    assert set(agents) == {entry["subagent_id"] for entry in subagents}
    for entry in subagents:
        span = agents[entry["subagent_id"]]
        call = by_id[span.parent_id]  # type: ignore[index]
        assert call.operation == "execute_tool", (span.name, call.name)
        assert call.attributes["gen_ai.tool.call.id"] == entry["parent_tool_use_id"]
        assert span.attributes["taskwire.parent_tool_use_id"] == entry["parent_tool_use_id"]
        assert span.attributes["taskwire.subagent_id"] == entry["subagent_id"]
        spawner = root if entry.get("parent_subagent_id") is None else agents[entry["parent_subagent_id"]]
        assert call.parent_id == spawner.span_id, f"{call.name} is not in the spawning agent's span"
    stray = [s.name for s in spans if "taskwire.subagent_id" in s.attributes and s.parent_id == root.span_id]
    assert not stray, f"sub-agent spans hanging off the root: {stray}"
    for span in spans:
        assert isinstance(span.attributes.get("taskwire.seq.first"), int), span.name
    return agents
