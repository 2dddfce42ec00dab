"""Steering one OpenHands sub-agent: a person's message joins that sub-conversation's history
after its step in flight and its next model request carries it; no request of the main agent
or of its sibling does. It is stored once, in the sub-agent's own stream."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.helpers import all_events, create
from tests.openhands.helpers import openhands_server
from tests.openhands.test_control import running_subagents
from tests.services import wait_until

STEER = "Change course: count the primes below 30."


def requests_by_lane(log: Path) -> dict[str, list[str]]:
    lanes: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        lanes.setdefault(entry["lane"] or "", []).append(entry["body"])
    return lanes


async def test_a_message_reaches_that_subagents_next_request_and_no_other(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "slow_subagents", forward_subagent_events=True) as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        running = await running_subagents(oh, info["id"], 2)
        target = next(s for s in running if s["description"] == "slow a")
        response = await oh.server.client.post(
            f"/api/conversations/{info['id']}/subagents/{target['subagent_id']}/messages", json={"content": STEER})
        assert response.status_code == 202, response.text
        assert response.json()["content"] == STEER

        await wait_until(lambda: any(STEER in body for body in requests_by_lane(oh.log).get("sub-slow-a", [])),
                         timeout=120, what="the steered sub-agent's next request to carry the message")
        lanes = requests_by_lane(oh.log)
        assert not any(STEER in body for lane, bodies in lanes.items() if lane != "sub-slow-a" for body in bodies)

        mine = [e for e in await all_events(oh.server, info["id"], parent_tool_use_id=target["parent_tool_use_id"],
                                            kind="MessageEvent") if e["content"] == STEER]
        assert len(mine) == 1 and mine[0]["source"] == "user"
        parents = [e for e in await all_events(oh.server, info["id"], kind="MessageEvent") if e["content"] == STEER]
        assert parents == []

        assert (await oh.server.client.post(f"/api/conversations/{info['id']}/interrupt")).status_code == 200
        ended = await oh.server.client.post(
            f"/api/conversations/{info['id']}/subagents/{target['subagent_id']}/messages", json={"content": "Too late."})
        assert ended.status_code == 409 and ended.json()["code"] == "subagent_not_running", ended.text
