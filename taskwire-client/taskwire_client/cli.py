"""The client's commands: ``watch`` (a conversation's tree, live) and ``approve`` (answer a
permission request). ``python -m taskwire_client watch ID --url URL`` runs them without the
server installed; the server's ``taskwire`` command carries the same two."""

from __future__ import annotations

import argparse
import sys

from taskwire_client import approve, watch
from taskwire_client.version import __version__


def add_commands(commands: argparse._SubParsersAction, program: str) -> None:
    """``watch`` and ``approve`` under ``commands``; ``program`` is how printed hints run them."""
    watch.add_commands(commands, program)
    approve.add_commands(commands)


def main(argv: list[str] | None = None, *, program: str = "python -m taskwire_client") -> int:
    parser = argparse.ArgumentParser(prog=program, description="Follow a taskwire conversation's tree of sub-agents.")
    parser.add_argument("--version", action="version", version=f"taskwire-client {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_commands(commands, program)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
