"""Reading AG-UI's SSE with httpx, as a test's own client."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import httpx

Frame = tuple[int, dict[str, Any]]


async def frames_of(response: httpx.Response) -> AsyncIterator[Frame]:
    """The ``(id, event)`` frames of an SSE response, as they arrive (comments skipped)."""
    sse_id, data = None, []
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            sse_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            assert sse_id is not None, "every event carries an id"
            yield sse_id, json.loads("\n".join(data))
            sse_id, data = None, []


async def read_all(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> list[Frame]:
    """Every frame of a stream that ends by itself."""
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [frame async for frame in frames_of(response)]


def run_input(thread: str, run_id: str, message: str, **extra: Any) -> dict[str, Any]:
    """A minimal ``RunAgentInput``."""
    return {"threadId": thread, "runId": run_id, "messages": [{"id": f"m-{run_id}", "role": "user", "content": message}], **extra}
