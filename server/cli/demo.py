"""``taskwire demo``: start the signature scenario on a running server and watch it live.

It is a client of the public API only: ``POST /api/conversations``, then the WebSocket. Every
tool event becomes one row: ``tool_call_id``, status, ``parent_tool_use_id``, title. Sub-agent
rows point at the ``task`` call that spawned them; main-agent rows have none.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import httpx
import websockets
from rich.console import Console

from server.api.demo import SCENARIOS, scenario_request
from server.cli.rows import root_finished, tool_row


ROW = "{seq:>4}  {call:<24} {status:<11} {parent:<24} {title}"


def add_commands(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="run the two-sub-agent demo on a server and print tool events live")
    demo.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default %(default)s)")
    demo.add_argument("--api-key", help="a session API key, if the server has them")
    demo.add_argument("--scenario", default="two_subagents", choices=sorted(SCENARIOS))
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the run to end")
    demo.add_argument("--pace", type=float, default=0.0, help="seconds each model turn waits, to watch it unfold")
    demo.set_defaults(handler=lambda args: asyncio.run(run_demo(args)))


async def run_demo(args: argparse.Namespace) -> int:
    console = Console()
    headers = {"X-Session-API-Key": args.api_key} if args.api_key else {}
    body = scenario_request(args.scenario, args.pace)
    async with httpx.AsyncClient(base_url=args.url, headers=headers, timeout=30) as client:
        try:
            info = await client.get("/server_info")
            response = await client.post("/api/conversations", json=body)
        except httpx.HTTPError as exc:
            console.print(f"[red]cannot reach {args.url}:[/red] {exc}. Start the server first: make run")
            return 1
        if response.status_code != 201:
            console.print(f"[red]the server refused the conversation ({response.status_code}):[/red] {response.text}")
            return 1
        conversation = response.json()
        if not info.json().get("forward_subagent_events"):
            console.print("[yellow]forwarding is off on this server (OH_FORWARD_SUBAGENT_EVENTS): sub-agent rows will not show[/yellow]")
    console.print(f"conversation [bold]{conversation['id']}[/bold]")
    console.print(ROW.format(seq="seq", call="tool_call_id", status="status", parent="parent_tool_use_id", title="title"), style="bold")
    ws_url = args.url.replace("http", "ws", 1) + f"/sockets/events/{conversation['id']}?resend_mode=all"
    async with websockets.connect(ws_url, additional_headers=headers, max_size=None) as socket:
        async with asyncio.timeout(args.timeout):
            async for frame in socket:
                event = json.loads(frame)
                row = tool_row(event)
                if row is not None:
                    call_id, status, parent, title = row
                    style = "cyan" if parent != "-" else ""
                    line = ROW.format(seq=event.get("seq", ""), call=call_id, status=status, parent=parent, title=title)
                    console.print(line, style=style, markup=False, highlight=False, no_wrap=True, overflow="ellipsis")
                if root_finished(event):
                    console.print(f"run ended: [bold]{event['value']}[/bold]")
                    return 0 if event["value"] == "finished" else 1
    return 1
