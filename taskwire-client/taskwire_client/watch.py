"""``taskwire watch <conversation_id>``: a conversation's tree, live in the terminal.

A client of the public API only (``taskwire_client``): the main agent's steps in order, each
``task`` call with its sub-agent's steps nested under it, recursively, with status and token
usage; it exits when the run ends. A dropped connection resumes where it stopped: nothing
missed, nothing twice. On a terminal it redraws in place; piped, it prints the final tree once.

Each permission request the tree starts waiting on is printed as it comes (with forwarding off
too: the root's ``pending_permissions`` names it), with the ``taskwire approve`` commands that
answer it.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
from typing import Any, Callable

from taskwire_client.errors import ClientError, StreamRefused
from taskwire_client.frames import RUN_ENDS, run_ended_text
from taskwire_client.rest import Client
from taskwire_client.terminal import Terminal, render, styled
from taskwire_client.tree import Tree

REDRAWS_PER_SECOND = 8


def add_commands(commands: argparse._SubParsersAction, program: str) -> None:
    """``watch`` under ``commands``; ``program`` is how the printed hints run this program."""
    watch = commands.add_parser("watch", help="show a conversation's tree of agents and sub-agents live, until its run ends")
    watch.add_argument("conversation_id")
    watch.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default %(default)s)")
    watch.add_argument("--api-key", help="a session API key, if the server has them (sent as a header)")
    watch.add_argument("--timeout", type=float, help="give up after this many seconds (default: wait)")
    watch.set_defaults(handler=lambda args: asyncio.run(run_watch(args)), program=program)


async def run_watch(args: argparse.Namespace, terminal: Terminal | None = None) -> int:
    """Watch until the run ends: 0 when it finished, 1 when it failed or paused, 2 when the
    server refused (unknown conversation, bad key, not a taskwire server it speaks to) or could
    not be reached."""
    terminal = terminal or Terminal()
    tree = Tree(args.conversation_id)
    program = getattr(args, "program", "taskwire")

    def announce(entry: dict[str, Any]) -> None:
        terminal.print(request_text(tree, entry, url=args.url, keyed=bool(args.api_key), program=program))

    # Redrawn from this loop: the tree changes only between awaits here.
    redraw = asyncio.create_task(_redraw(terminal, tree))
    try:
        async with asyncio.timeout(args.timeout):
            outcome = await follow(args.url, args.api_key, tree, on_request=announce,
                                   on_note=lambda note: terminal.print(note, "yellow"))
    except TimeoutError:
        outcome = f"gave up after {args.timeout:g} s"
    finally:
        redraw.cancel()
        await asyncio.gather(redraw, return_exceptions=True)
        terminal.draw(render(tree))  # the whole tree, left on screen
    if not terminal.is_terminal:
        terminal.print()
    if outcome in RUN_ENDS:
        terminal.print(f"run ended: {styled(run_ended_text(outcome, tree.error), 'bold', color=terminal.color)}")
        return 0 if outcome == "finished" else 1
    terminal.print(outcome, "red")
    return 2


async def follow(
    url: str,
    api_key: str | None,
    tree: Tree,
    on_request: Callable[[dict[str, Any]], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> str:
    """Feed ``tree`` until the run ends; the status it ended with, or why watching stopped.
    ``on_request`` is called once with each pending permission entry as it first appears;
    ``on_note`` with a warning about the server (a newer taskwire than this client knows)."""
    announced: set[str] = set()
    async with Client(url, api_key=api_key) as client:
        try:
            note = await client.check_server()
            if note and on_note is not None:
                on_note(note)
            async with client.events(tree.conversation_id, until_run_ends=True) as live:
                async for event in live:
                    tree.apply(event)
                    for entry in tree.pending_permissions:
                        if on_request is not None and entry["request_id"] not in announced:
                            announced.add(entry["request_id"])
                            if entry.get("subagent_id") and entry["subagent_id"] not in tree.subagents:
                                # Forwarding off: the tree learns its sub-agents from REST.
                                tree.apply_subagents(await client.subagents(tree.conversation_id))
                            on_request(entry)
            return live.status or "the stream ended"
        except StreamRefused as exc:
            return f"the server refused: {exc.reason or exc.code}"
        except ClientError as exc:  # unreachable, not a taskwire server, a frame out of protocol
            return str(exc)


def request_text(tree: Tree, entry: dict[str, Any], *, url: str, keyed: bool, program: str = "taskwire") -> str:
    """Two lines for a waiting request: who asks to run what, and the commands that answer."""
    sub = tree.subagents.get(entry.get("subagent_id") or "")
    if entry.get("subagent_id") is None:
        who = "the main agent"
    elif sub is None:
        who = f"sub-agent {entry['subagent_id']}"
    else:
        who = " ".join(p for p in (sub.label, sub.description) if p) or sub.subagent_id
    command = f"{program} approve {shlex.quote(tree.conversation_id)} {shlex.quote(entry['request_id'])}"
    if url.rstrip("/") != "http://127.0.0.1:8000":
        command += f" --url {shlex.quote(url)}"
    if keyed:
        command += " --api-key <key>"
    return (
        f"⏸ {who} asks to run {entry.get('tool_name', 'a tool')}: {entry.get('title', '')}\n"
        f"  allow: {command}\n  reject: {command} --reject --reason '...'"
    )


async def _redraw(terminal: Terminal, tree: Tree) -> None:
    if not terminal.is_terminal:
        return  # piped: the final tree is printed once, at the end
    while True:
        terminal.draw(render(tree, live=True, max_steps=max(5, terminal.height // 2)))
        await asyncio.sleep(1 / REDRAWS_PER_SECOND)
