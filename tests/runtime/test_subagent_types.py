"""The sub-agent types a ``task`` call may name: read once per run of the root, so a tree's
parallel and nested calls share one reading, and a type file written between runs is seen by
the next run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from taskwire.runtime.agent_types import SubagentType
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status


def task(prompt: str, subagent_type: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": prompt, "prompt": prompt, "subagent_type": subagent_type}}


def finish(message: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "finish", "arguments": {"message": message}}]}


def results(events: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in events if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]


async def finished(server: RunningServer, conversation_id: str) -> list[dict[str, Any]]:
    done = await wait_for_status(server.client, conversation_id, {"finished", "error"})
    events = await all_events(server, conversation_id)
    assert done["status"] == "finished", events
    return events


async def test_one_run_reads_the_types_once_for_all_its_task_calls(tmp_path: Path) -> None:
    reads: list[Path | None] = []

    def counting(workspace: Path | None) -> Iterable[SubagentType]:
        reads.append(workspace)
        return ()

    # The root starts three sub-agents at once; one of them starts one of its own.
    script = json.dumps({"lanes": [
        {"name": "nest", "match": {"first_user_ends_with": "Nest."},
         "turns": [{"tool_calls": [task("Leaf.", "general-purpose")]}, finish("nested")]},
        {"name": "leaf", "match": {"first_user_ends_with": "Leaf."}, "turns": [finish("leaf")]},
        {"name": "main", "turns": [
            {"tool_calls": [task("Nest.", "general-purpose"), task("Leaf.", "general-purpose"),
                            task("Leaf.", "code-explorer")]},
            finish("all done"),
        ]},
    ]})
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        server.app.state.hooks.subagent_sources.append(counting)
        info = await create(server, agent=scripted_agent(script), initial_message="Go.")
        events = await finished(server, info["id"])
        assert len(results(events)) == 3 and all(" completed." in r for r in results(events))
        assert len(reads) == 1
        # The next run reads them again.
        await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "Again."})
        await finished(server, info["id"])
        assert len(reads) == 1  # that run made no task call
        (await server.client.get("/api/sub-agents")).raise_for_status()
        assert len(reads) == 2  # listing them is not cached


async def test_a_type_file_added_or_edited_between_runs_is_seen_by_the_next_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    folder = project / ".agents/agents"
    folder.mkdir(parents=True)
    script = json.dumps({"lanes": [
        {"name": "one", "match": {"system_contains": "Version one."}, "turns": [finish("version one ran")]},
        {"name": "two", "match": {"system_contains": "The second version."}, "turns": [finish("version two ran")]},
        {"name": "main", "turns": [
            {"tool_calls": [task("Write notes.", "release-notes")]}, finish("first run"),
            {"tool_calls": [task("Write notes.", "release-notes")]}, finish("second run"),
            {"tool_calls": [task("Write notes.", "release-notes")]}, finish("third run"),
        ]},
    ]})
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent(script), workspace=str(project), initial_message="Go.")
        seen = results(await finished(server, info["id"]))
        assert seen[0].startswith("Unknown subagent_type 'release-notes'. Known types: ")
        assert "general-purpose" in seen[0]

        notes = folder / "release-notes.md"
        notes.write_text("---\ndescription: Writes release notes.\n---\nVersion one.\n")
        await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "Again."})
        seen = results(await finished(server, info["id"]))
        assert seen[1] == "Sub-agent task-1 (release-notes) completed.\n\nversion one ran"

        notes.write_text("---\ndescription: Writes release notes.\n---\nThe second version.\n")
        await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "Once more."})
        seen = results(await finished(server, info["id"]))
        assert seen[2] == "Sub-agent task-2 (release-notes) completed.\n\nversion two ran"
