"""A command that prints 200 MB costs the server the bound of what the model sees, not the
output: ``terminal`` reads it as a stream and keeps the head and the tail."""

from __future__ import annotations

from taskwire.runtime.tools.terminal import MAX_OUTPUT
from tests.reliability.conftest import reset_peak, rss_mb
from tests.servers import ServerProcess, wait_for_status

PRINTED = 200_000_000
BOUND_MB = 50
SCRIPT = (
    "lanes:\n  - name: main\n    turns:\n"
    f"      - tool_calls: [{{name: terminal, arguments: {{command: 'echo start; head -c {PRINTED} /dev/zero | tr \"\\\\0\" x; echo; echo end'}}}}]\n"
    "      - text: done\n"
)


async def test_a_command_printing_200_mb_leaves_the_server_memory_bounded(served: ServerProcess) -> None:
    assert served.process is not None
    pid = served.process.pid
    idle = rss_mb(pid)
    reset_peak(pid)
    body = {"agent": {"kind": "native", "llm": {"api": "scripted", "script": SCRIPT}}, "initial_message": "go"}
    conversation = (await served.client.post("/api/conversations", json=body)).json()["id"]
    await wait_for_status(served.client, conversation, {"finished", "error"}, timeout=120)
    peak = rss_mb(pid, "VmHWM")
    page = (await served.client.get(f"/api/conversations/{conversation}/events/search",
                                    params={"kind": "ObservationEvent"})).json()
    (observation,) = page["items"]
    content = observation["content"]
    assert content.startswith("exit code: 0\nstart\nxxx") and content.endswith("xxx\nend\n")
    printed = len("start\n") + PRINTED + len("\nend\n")
    assert f"\n[... {printed - MAX_OUTPUT} bytes omitted ...]\n" in content
    assert peak - idle < BOUND_MB, f"idle {idle:.0f} MB, peak {peak:.0f} MB while the command printed 200 MB"
