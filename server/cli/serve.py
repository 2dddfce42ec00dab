"""``taskwire serve`` and ``taskwire mock-llm``."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress

from pathlib import Path

from rich.console import Console

from server.settings import Settings

err = Console(stderr=True, soft_wrap=True)  # commands stay whole, so they copy and paste


def add_commands(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="run the server (settings from OH_* and the TOML file)")
    serve.add_argument("--host", help="address to bind (overrides OH_HOST)")
    serve.add_argument("--port", type=int, help="port (overrides OH_PORT)")
    serve.set_defaults(handler=run_serve)

    mock = commands.add_parser("mock-llm", help="serve a scripted LLM over HTTP (OpenAI and Anthropic dialects)")
    mock.add_argument("--script", required=True, help="a script file (see docs/scripted-llm.md)")
    mock.add_argument("--host", default="127.0.0.1")
    mock.add_argument("--port", type=int, default=8765)
    mock.add_argument("--log", help="append every request body to this JSONL file")
    mock.set_defaults(handler=run_mock_llm)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from server.api.app import create_app

    overrides = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    settings = Settings(**overrides)
    if not settings.session_api_keys and not is_loopback(settings.host):
        err.print(
            f"[red]refusing to bind {settings.host}:[/red] no session API key is set, so anyone who can "
            "reach this address could run commands. Set OH_SESSION_API_KEYS='[\"<key>\"]' or bind 127.0.0.1."
        )
        return 2
    problem = asyncio.run(store_problem(settings))
    if problem is not None:
        err.print(f"[red]cannot open the store {settings.resolved_database_url().split('@')[-1]}:[/red] {problem}")
        return 2
    base = f"http://{settings.host}:{settings.port}"
    err.print(f"[bold]taskwire[/bold] on {base}  (docs: {base}/docs)")
    err.print(f"  watch it in a browser:  {base}/")
    err.print(f"  forwarding of sub-agent events: {'on' if settings.forward_subagent_events else 'off'}")
    err.print(f"  LLM: {settings.llm_api} {settings.llm_script or settings.llm_model}")
    err.print("  start a conversation:")
    err.print(f"    curl -s -X POST {base}/api/conversations -H 'Content-Type: application/json' -d '{{\"initial_message\": \"go\"}}'")
    err.print("  watch it live (with the id it returns):")
    err.print(f"    taskwire watch <id> --url {base}     or     python -m websockets ws://{settings.host}:{settings.port}/sockets/events/<id>")
    err.print(f"  or run the whole demo:  .venv/bin/taskwire demo --url {base}")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning", ws="websockets-sansio")
    return 0


async def store_problem(settings: Settings) -> str | None:
    """Open (and migrate) the store once before serving, so a refusal reads as one line, not a
    start-up traceback."""
    from server.store import open_store
    from server.store.schema import SchemaVersionError

    try:
        store = open_store(settings.resolved_database_url())
        await store.open()
    except (SchemaVersionError, OSError, ValueError) as exc:
        return str(exc)
    await store.close()
    return None


def run_mock_llm(args: argparse.Namespace) -> int:
    from server.llm.mock_server import serve_mock_llm

    script = args.script
    if not Path(script).is_file():
        err.print(f"[red]no such script file:[/red] {script}")
        return 2
    err.print(f"scripted LLM on http://{args.host}:{args.port} (/v1/chat/completions, /v1/messages)")
    asyncio.run(serve_mock_llm(script, args.host, args.port, args.log))
    return 0


