"""``taskwire serve`` and ``taskwire mock-llm``."""

from __future__ import annotations

import argparse
import asyncio
import gc
import ipaddress
import logging
import signal
from pathlib import Path

from rich.console import Console

from .banner import banner
from ..resources import bundled_file
from ..settings import Settings
from ..settings_problems import SettingsProblem, load_settings

GC_THRESHOLDS = (50_000, 20, 20)
"""The cyclic collector's thresholds in a server process (Python's default: 700, 10, 10). With
hundreds of trees running, their agents keep a great many objects alive, and at the default
the collector ran a third of the time, in pauses of up to 1.4 s that held every socket
(``bench/many.py``, 500 trees: 29 s of a 76 s run). A young generation of 50,000 objects brings
that under a second and the longest pause to about 0.1 s; reference counting frees the rest as
before. Set here, by the process's owner, not by the app: two apps may share a process."""

err = Console(stderr=True, soft_wrap=True)  # commands stay whole, so they copy and paste


INTERRUPTED = 128 + signal.SIGINT
"""The exit status after a Ctrl-C (SIGINT), as a shell reports a command it interrupted."""


def add_commands(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="run the server (settings from OH_* and the TOML file)")
    serve.add_argument("--host", help="address to bind (overrides OH_HOST)")
    serve.add_argument("--port", type=int, help="port (overrides OH_PORT)")
    serve.set_defaults(handler=run_serve)

    mock = commands.add_parser("mock-llm", help="serve a scripted LLM over HTTP (OpenAI and Anthropic dialects)")
    mock.add_argument("--script", required=True, help="a script file (see docs/scripted-llm.md); config/demo/<name>.yaml names a bundled one from any folder")
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
    from ..api.app import create_app
    from ..api.serving import uvicorn_config
    from .listening import BannerServer, listen
    from ..environment import drop_settings
    from ..telemetry.logs import configure_logging

    overrides = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    try:
        settings = load_settings(**overrides)
    except SettingsProblem as exc:
        err.print(f"[red]cannot start:[/red] {exc}", markup=True, highlight=False)
        return 2
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
    try:
        # Bound before the app starts: "address already in use" is said before anything else.
        listener = listen(settings.host, settings.port)
    except OSError as exc:
        err.print(f"[red]cannot listen on {settings.host}:{settings.port}:[/red] {exc.strerror or exc}. "
                  "Is another server running there? Choose another port with --port or OH_PORT.")
        return 2
    drop_settings()  # read: from here on no process this one starts can inherit them
    gc.set_threshold(*GC_THRESHOLDS)
    configure_logging(settings.log_format, settings.log_level)
    # uvicorn's own start-up lines and its line per request say less than the banner and the
    # runs' lines: they are written at DEBUG only.
    debug = settings.log_level == "DEBUG"
    uvicorn_level = "debug" if debug else max(settings.log_level, "WARNING", key=logging.getLevelName).lower()
    config = uvicorn_config(create_app(settings), settings, log_level=uvicorn_level, log_config=None, access_log=debug)
    port = listener.getsockname()[1]

    def announce() -> None:
        if settings.log_format == "json":  # stderr stays one JSON object per line
            logging.getLogger(__package__).info("taskwire listening on %s:%d", settings.host, port)
            return
        for line in banner(settings, port):
            err.print(line)

    try:
        BannerServer(config, announce).run(sockets=[listener])
    except KeyboardInterrupt:
        # uvicorn re-raises the SIGINT it caught once it has shut down: the stop was clean.
        return INTERRUPTED
    return 0


async def store_problem(settings: Settings) -> str | None:
    """Open (and migrate) the store once before serving, so a refusal reads as one line, not a
    start-up traceback."""
    import asyncpg

    from ..errors import StoreUnavailable
    from ..store import open_store
    from ..store.schema import SchemaVersionError

    try:
        store = open_store(settings.resolved_database_url(), timeout=settings.store_timeout)
        await store.open()
    except asyncpg.InvalidCatalogNameError as exc:  # the database named in the URL does not exist
        return f"{exc}; create it (createdb) or fix OH_DATABASE_URL"
    except (SchemaVersionError, StoreUnavailable, OSError, ValueError, asyncpg.PostgresError) as exc:
        return str(exc)
    await store.close()
    return None


def run_mock_llm(args: argparse.Namespace) -> int:
    from ..llm.mock_server import serve_mock_llm

    script = bundled_file(args.script)  # config/demo/*.yaml works from any folder
    if not Path(script).is_file():
        err.print(f"[red]no such script file:[/red] {script}")
        return 2
    err.print(f"scripted LLM on http://{args.host}:{args.port} (/v1/chat/completions, /v1/messages)")
    try:
        asyncio.run(serve_mock_llm(script, args.host, args.port, args.log))
    except KeyboardInterrupt:  # as for serve: uvicorn re-raises the SIGINT once it has stopped
        return INTERRUPTED
    return 0


