"""``taskwire approve CONVERSATION REQUEST [--reject] [--reason TEXT]``: answer a permission
request from the terminal (``taskwire watch`` prints each request with this command)."""

from __future__ import annotations

import argparse
import asyncio

from taskwire_client.errors import APIError, ClientError
from taskwire_client.rest import Client
from taskwire_client.terminal import Terminal, styled


def add_commands(commands: argparse._SubParsersAction) -> None:
    """``approve`` under ``commands``."""
    approve = commands.add_parser(
        "approve", help="answer a tool call's permission request (allow it, or --reject it)"
    )
    approve.add_argument("conversation_id")
    approve.add_argument("request_id", help="the request_id, as `taskwire watch` prints it")
    approve.add_argument("--reject", action="store_true", help="reject the call instead of allowing it")
    approve.add_argument("--always", action="store_true", help="the same answer for this tool in the whole tree from now on")
    approve.add_argument("--reason", help="why (a rejected call's result tells the agent)")
    approve.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default %(default)s)")
    approve.add_argument("--api-key", help="a session API key, if the server has them (sent as a header)")
    approve.set_defaults(handler=lambda args: asyncio.run(run_approve(args)))


async def run_approve(args: argparse.Namespace, terminal: Terminal | None = None) -> int:
    """0 once the answer is recorded; 1 when the request already had one (or ended) or the
    answer is not one it offers; 2 for an unknown request or conversation, or no server."""
    terminal = terminal or Terminal()
    decision = "reject" if args.reject else "allow"
    async with Client(args.url, api_key=args.api_key) as client:
        try:
            resolved = await client.answer_permission(
                args.conversation_id, args.request_id, decision=decision, always=args.always, reason=args.reason
            )
        except APIError as exc:
            terminal.print(f"not answered ({exc.status} {exc.code}): {exc.detail}", "red")
            return 2 if exc.status in (401, 404) else 1
        except ClientError as exc:
            terminal.print(str(exc), "red")
            return 2
    outcome = getattr(resolved, "outcome", decision)
    terminal.print(f"request {args.request_id}: {styled(str(outcome), 'bold', color=terminal.color)} ({getattr(resolved, 'option_id', '')})")
    return 0
