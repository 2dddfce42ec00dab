"""The ``taskwire`` command: serve, mock-llm, demo, watch, approve, acp."""

from __future__ import annotations

import argparse
import sys

from taskwire_client import cli as client_cli

from .. import __version__
from . import acp, demo, serve
from .banner import taskwire_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taskwire", description="An agent server that shows what sub-agents do.")
    parser.add_argument("--version", action="version", version=f"taskwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve.add_commands(commands)
    demo.add_commands(commands)
    # watch and approve are the client distribution's own commands, the same code either way.
    client_cli.add_commands(commands, taskwire_command())
    acp.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
