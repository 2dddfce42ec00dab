"""Rendering: how long the viewer page takes to take in a conversation of 10,000 events.

The events are produced through the runtime, as a native agent would: the main agent's messages
and terminal calls, and every 25 steps a ``task`` call whose sub-agent runs a few steps of its
own (stamped, in its own stream, forwarded). The page is then opened on the finished
conversation in headless chromium (Debian's ``/usr/bin/chromium``) and measured through its
``window.__taskwire`` hook: from the socket's open to the last event on screen, after the paint.
Also reported: the longest main-thread task while it did so (the page takes events in a frame
at a time, so it stays responsive), the page's size in DOM nodes, and the floor: a bare
WebSocket in the same browser receiving and parsing the same replay.

    .venv/bin/python bench/viewer.py [--events 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import isolated_settings, taskwire_server
from rich.console import Console
from rich.table import Table

from taskwire.events import ActionEvent, MessageEvent, ObservationEvent

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

# Installed before the page's own scripts: records main-thread tasks over 50 ms.
LONG_TASKS_JS = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longTasks.push([entry.startTime, entry.duration]);
}).observe({ type: "longtask", buffered: true });
"""


async def tool_step(host: Any, n: int) -> None:
    """One agent step: a thought, a terminal call and its output (3 events)."""
    call_id = f"call-{host.conversation_id[:8]}-{n}"
    await host.emit(MessageEvent(role="assistant", content=f"Step {n}: checking the next file."))
    await host.emit(ActionEvent(tool_name="terminal", tool_call_id=call_id, arguments={"command": f"wc -l src/file_{n}.py"}))
    await host.emit(ObservationEvent(tool_name="terminal", tool_call_id=call_id, content=f"exit code: 0\n{n * 7} src/file_{n}.py"))


async def produce(host: Any, events: int) -> None:
    """Emit about ``events`` stored events into ``host``'s tree, sub-agents included."""
    n = 0
    while await host._store.last_seq(host.root_id) < events:
        n += 1
        if n % 25:
            await tool_step(host, n)
            continue
        call_id = f"task-{n}"
        await host.emit(ActionEvent(tool_name="task", tool_call_id=call_id, arguments={"description": f"Inspect part {n}", "prompt": "Inspect it."}))
        child = await host.start_subagent(call_id, subagent_type="general-purpose", description=f"Inspect part {n}")
        await child.emit(MessageEvent(role="user", source="user", content="Inspect it."))
        for step in range(4):
            await tool_step(child, step)
        await host.finish_subagent(child, status="completed", result=f"part {n} is fine")
        await host.emit(ObservationEvent(tool_name="task", tool_call_id=call_id, content=f"part {n} is fine"))


# The floor: a bare WebSocket in the same browser, receiving and parsing the same replay.
BARE_SOCKET_JS = """([url, last]) => new Promise((resolve) => {
  const socket = new WebSocket(url);
  let opened = 0;
  socket.onopen = () => { opened = performance.now(); };
  socket.onmessage = (message) => {
    if (JSON.parse(message.data).seq === last) {
      resolve(performance.now() - opened);
      socket.close();
    }
  };
})"""


async def bare_socket(browser: Any, server_url: str, socket_url: str, last_seq: int) -> float:
    """Milliseconds for a bare WebSocket to receive and parse the whole replay."""
    page = await browser.new_page()
    try:
        await page.goto(f"{server_url}/alive")
        return await page.evaluate(BARE_SOCKET_JS, [socket_url, last_seq])
    finally:
        await page.close()


async def measure(browser: Any, url: str, last_seq: int) -> dict[str, float]:
    context = await browser.new_context(viewport={"width": 1366, "height": 800})
    try:
        page = await context.new_page()
        await page.add_init_script(LONG_TASKS_JS)
        await page.goto(url)
        await page.wait_for_function("window.__taskwire && window.__taskwire.view", timeout=60_000)
        figures = await page.evaluate(f"window.__taskwire.rendered({last_seq})")
        figures["long_tasks"] = await page.evaluate("window.__longTasks")
        figures["nodes"] = await page.evaluate("document.getElementsByTagName('*').length")
        return figures
    finally:
        await context.close()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (apt-get install chromium, or make browser)", file=sys.stderr)
        return 1
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as tmp:
        settings = isolated_settings(Path(tmp), forward_subagent_events=True)
        async with taskwire_server(settings) as server:
            record = await server.runtime.create({"kind": "native"}, run=False)
            host = await server.runtime.host(record.id)
            await produce(host, args.events)
            last_seq = await server.runtime.store.last_seq(record.id)
            subagents = len(await server.runtime.subagents(record.id))
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                try:
                    runs = []
                    for _ in range(args.runs):
                        runs.append(await measure(browser, f"{server.url}/#/c/{record.id}", last_seq))
                        socket_url = f"{server.ws_url}/sockets/events/{record.id}?resend_mode=all"
                        runs[-1]["bare_ms"] = await bare_socket(browser, server.url, socket_url, last_seq)
                finally:
                    await browser.close()
    assert all(run["events"] == last_seq for run in runs), [run["events"] for run in runs]
    times = [run["renderedAt"] - run["openedAt"] for run in runs]
    # Only tasks while events came in: loading the page's modules is not intake.
    longest = [max((d for t, d in run["long_tasks"] if t >= run["openedAt"]), default=0.0) for run in runs]
    table = Table(title=f"viewer: taking in {last_seq:,} events ({subagents} sub-agents), headless chromium")
    table.add_column("run", justify="right")
    table.add_column("socket open -> last event on screen", justify="right")
    table.add_column("events/s", justify="right")
    table.add_column("bare WebSocket, same replay", justify="right")
    table.add_column("longest main-thread task while taking them in", justify="right")
    table.add_column("DOM nodes", justify="right")
    for i, (run, ms, long) in enumerate(zip(runs, times, longest), 1):
        table.add_row(
            str(i), f"{ms:,.0f} ms", f"{last_seq / ms * 1000:,.0f}", f"{run['bare_ms']:,.0f} ms",
            f"{long:,.0f} ms", f"{run['nodes']:,}",
        )
    console = Console()
    console.print(table)
    median = statistics.median(times)
    bare = statistics.median(run["bare_ms"] for run in runs)
    console.print(
        f"median: [bold]{median:,.0f} ms[/bold] for {last_seq:,} events ({last_seq / median * 1000:,.0f} events/s); "
        f"a bare WebSocket receiving the same frames in the same browser: {bare:,.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
