"""The ``taskwire`` command: serve, mock-llm, demo, watch, approve, acp."""

from __future__ import annotations

import argparse
import sys

from server.cli import serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taskwire", description="An agent server that shows what sub-agents do.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve.add_commands(commands)
    for name in ("demo", "watch", "approve", "acp"):
        try:
            module = __import__(f"server.cli.{name}", fromlist=["add_commands"])
        except ImportError:
            continue
        module.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
