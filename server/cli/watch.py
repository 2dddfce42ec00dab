"""``taskwire watch <conversation_id>``: a conversation's tree, live in the terminal.

A client of the public WebSocket only: the main agent's steps in order, each ``task`` call with
its sub-agent's steps nested under it, recursively, with status and token usage; it exits when
the run ends. After a dropped connection it resumes with ``after_seq``: nothing missed, nothing
twice. On a terminal it redraws in place; piped, it prints the final tree once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import websockets
from rich.console import Console
from rich.live import Live

from server.cli.event_tree import EventTree
from server.cli.rows import RUN_ENDS
from server.stream.close_codes import CloseCode

FATAL = {CloseCode.BAD_REQUEST, CloseCode.UNAUTHORIZED, CloseCode.UNKNOWN_CONVERSATION}
MAX_RETRIES = 8
REDRAWS_PER_SECOND = 8


def add_commands(commands: argparse._SubParsersAction) -> None:
    watch = commands.add_parser("watch", help="show a conversation's tree of agents and sub-agents live, until its run ends")
    watch.add_argument("conversation_id")
    watch.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default %(default)s)")
    watch.add_argument("--api-key", help="a session API key, if the server has them (sent as a header)")
    watch.add_argument("--timeout", type=float, help="give up after this many seconds (default: wait)")
    watch.set_defaults(handler=lambda args: asyncio.run(run_watch(args)))


async def run_watch(args: argparse.Namespace, console: Console | None = None) -> int:
    """Watch until the run ends: 0 when it finished, 1 when it failed or paused, 2 when the
    server refused (unknown conversation, bad key) or could not be reached."""
    console = console or Console()
    watcher = Watcher(args.url, args.conversation_id, args.api_key)
    # Refreshed from this loop, not rich's thread: the tree changes only between awaits here.
    with Live(console=console, auto_refresh=False) as live:
        redraw = asyncio.create_task(_redraw(live, watcher.tree))
        try:
            async with asyncio.timeout(args.timeout):
                outcome = await watcher.run()
        except TimeoutError:
            outcome = f"gave up after {args.timeout:g} s"
        finally:
            redraw.cancel()
            await asyncio.gather(redraw, return_exceptions=True)
            live.update(watcher.tree.render())  # the whole tree, left on screen
    if not console.is_terminal:
        console.line()
    if outcome in RUN_ENDS:
        console.print(f"run ended: [bold]{outcome}[/bold]")
        return 0 if outcome == "finished" else 1
    console.print(f"[red]{outcome}[/red]")
    return 2


async def _redraw(live: Live, tree: EventTree) -> None:
    if not live.console.is_terminal:
        return  # piped: the final tree is printed once, at the end
    while True:
        live.update(tree.render(live=True, max_steps=max(5, live.console.height // 2)), refresh=True)
        await asyncio.sleep(1 / REDRAWS_PER_SECOND)


class Watcher:
    """Reads one conversation's socket into an ``EventTree``, resuming after drops."""

    def __init__(self, url: str, conversation_id: str, api_key: str | None) -> None:
        self.url = url.rstrip("/")
        self.conversation_id = conversation_id
        self.headers = {"X-Session-API-Key": api_key} if api_key else {}
        self.tree = EventTree(conversation_id)
        self.last_seq = 0
        """The last stored event taken in: where a reconnect resumes."""
        self.snapshot_seq = 0
        """The log's end when the socket opened: a run-end status at or past it is the current one."""
        self.reached = False
        """The server answered once: later connection failures are drops, worth retrying."""

    def socket_url(self) -> str:
        base = self.url.replace("http", "ws", 1) + f"/sockets/events/{self.conversation_id}"
        if self.last_seq:
            return f"{base}?resend_mode=since&after_seq={self.last_seq}"
        return f"{base}?resend_mode=all"

    async def run(self) -> str:
        """The status the run ended with, or why watching stopped."""
        retries = 0
        while True:
            try:
                async with websockets.connect(self.socket_url(), additional_headers=self.headers, max_size=None) as socket:
                    async for frame in socket:
                        retries, self.reached = 0, True
                        ended = self.take(json.loads(frame))
                        if ended is not None:
                            return ended
            except websockets.ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code in FATAL:
                    return f"the server refused: {exc.rcvd.reason or code}"  # type: ignore[union-attr]
            except (OSError, websockets.InvalidHandshake) as exc:
                if not self.reached or retries >= MAX_RETRIES:
                    return f"cannot reach {self.url}: {exc}"
            retries += 1
            await asyncio.sleep(min(5.0, 0.25 * 2**retries))

    def take(self, event: dict[str, Any]) -> str | None:
        """Take one frame; returns the run's end status once the run has ended."""
        if event.get("kind") == "ConversationStateUpdateEvent" and event.get("key") == "full_state":
            self.snapshot_seq = int(event["value"].get("last_seq") or 0)
            self.tree.apply_full_state(event["value"])
            return None
        if "kind" not in event:
            return None  # an error frame answering an inbound frame; we send none
        seq = event.get("seq")
        if seq is not None:
            if seq <= self.last_seq:
                return None
            self.last_seq = seq
        self.tree.apply(event)
        # Past the log's end as the socket opened, the root's latest status is the current one.
        if seq is not None and seq >= self.snapshot_seq and self.tree.status in RUN_ENDS:
            return self.tree.status
        return None
