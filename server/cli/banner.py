"""What ``taskwire serve`` prints once it listens: where it is, and commands that run as printed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ..settings import Settings
from ..telemetry.tracer import tracing_enabled


def taskwire_command() -> str:
    """How to run ``taskwire`` from here: ``taskwire`` when that is on ``PATH`` and is this
    installation, else this installation's script (``.venv/bin/taskwire`` from the clone)."""
    script = Path(sys.executable).parent / "taskwire"
    on_path = shutil.which("taskwire")
    if on_path is not None and script.exists() and Path(on_path).resolve() == script.resolve():
        return "taskwire"
    if not script.exists():
        return f"{sys.executable} -m taskwire"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def banner(settings: Settings, port: int) -> list[str]:
    """The lines to print (rich markup) for a server listening on ``port``."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    host = f"[{host}]" if ":" in host else host
    base = f"http://{host}:{port}"
    cmd = taskwire_command()
    model = settings.llm_script or settings.llm_model if settings.llm_api == "scripted" else settings.llm_model
    model = "an inline script" if "\n" in str(model) else model
    key = " --api-key <key>" if settings.session_api_keys else ""
    header = " -H 'X-Session-API-Key: <key>'" if settings.session_api_keys else ""
    lines = [
        f"[bold]taskwire[/bold] on {base}  (API docs: {base}/docs)",
        f"  in a browser:  {base}/",
        f"  forwarding of sub-agent events: {'on' if settings.forward_subagent_events else 'off'}"
        f"   LLM: {settings.llm_api} {model}",
    ]
    if settings.session_api_keys:
        lines.append("  keys are on: send one of OH_SESSION_API_KEYS where <key> stands")
    lines += [
        "  start a conversation:",
        f"    curl -s {base}/api/conversations -H 'Content-Type: application/json'{header} -d '{{\"initial_message\": \"Run the demo.\"}}'",
        "  watch it live (with the id it returns):",
        f"    {cmd} watch <id> --url {base}{key}",
        f"  or run the whole demo:  {cmd} demo --url {base}{key}",
        f"  metrics: {base}/metrics   tracing: {'on (OTLP/HTTP)' if tracing_enabled(settings) else 'off'}",
    ]
    return lines
