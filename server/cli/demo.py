"""``taskwire demo``: start the signature scenario on a running server and watch it live.

A client of the public API only (``taskwire_client``): it starts the scenario, then prints one
row per tool event: ``tool_call_id``, status, ``parent_tool_use_id``, title. Sub-agent rows
point at the ``task`` call that spawned them; main-agent rows have none.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.console import Console

from ..api.demo import SCENARIOS, scenario_request
from .rows import tool_row
from taskwire_client import APIError, Client, ClientError, run_ended_text

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
    # On a terminal a row is cut at its width; piped, rows stay whole (no 80-column default).
    fit = {"no_wrap": True, "overflow": "ellipsis"} if console.is_terminal else {"soft_wrap": True}
    async with Client(args.url, api_key=args.api_key) as client:
        try:
            info = await client.server_info()
            conversation = await client.create(**await _scenario_body(client, args.scenario, args.pace))
        except APIError as exc:
            console.print(f"[red]the server refused the conversation ({exc.status}):[/red] {exc.detail}")
            return 1
        except ClientError as exc:
            console.print(f"[red]{exc}.[/red] Start the server first: make run")
            return 1
        if not info.get("forward_subagent_events"):
            console.print("[yellow]forwarding is off on this server (OH_FORWARD_SUBAGENT_EVENTS): sub-agent rows will not show[/yellow]")
        console.print(f"conversation [bold]{conversation['id']}[/bold]")
        console.print(ROW.format(seq="seq", call="tool_call_id", status="status", parent="parent_tool_use_id", title="title"), style="bold")
        live = client.events(conversation["id"], deltas=False, until_run_ends=True)
        try:
            async with asyncio.timeout(args.timeout), live:
                async for event in live:
                    row = tool_row(event)
                    if row is not None:
                        call_id, status, parent, title = row
                        line = ROW.format(seq=event.seq or "", call=call_id, status=status, parent=parent, title=title)
                        console.print(line, style="cyan" if parent != "-" else "", markup=False, highlight=False, **fit)
        except TimeoutError:
            console.print(f"[red]gave up after {args.timeout:g} s[/red]")
            return 1
        except ClientError as exc:
            console.print(f"[red]stopped watching:[/red] {exc}")
            return 1
    console.print(f"run ended: [bold]{run_ended_text(live.status, live.error)}[/bold]", highlight=False)
    return 0 if live.status == "finished" else 1


async def _scenario_body(client: Client, name: str, pace: float) -> dict[str, Any]:
    """The body that starts scenario ``name``: as the server offers it (the script where that
    server has it, so a server installed anywhere finds it), else as this package names it
    (a server whose LLM is not the scripted one: the request asks for the scripted one)."""
    offered = await client.demo_scenarios(pace=pace)
    for scenario in offered.get("scenarios") or []:
        if scenario.get("name") == name and isinstance(scenario.get("request"), dict):
            return scenario["request"]
    return scenario_request(name, pace)
