"""Arize Phoenix, a real trace backend, for the tracing tests: ``phoenix serve`` on free ports.

Installed by ``make phoenix`` into ``.venv-phoenix`` (its own venv: its dependencies never meet
taskwire's pins; versions in ``phoenix-requirements.txt``). Spans are read back through its
REST API (``GET /v1/projects/{project}/spans``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.services import free_port
from tests.telemetry.spans import Span, from_phoenix

REPO = Path(__file__).resolve().parents[2]
PHOENIX = REPO / ".venv-phoenix" / "bin" / "phoenix"
START_TIMEOUT = 240.0
"""Seconds Phoenix may take to answer (it migrates its database first; the machine is shared)."""


class Phoenix:
    """One ``phoenix serve`` with its own working folder, HTTP (OTLP too) and gRPC ports."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "phoenix.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
            "PHOENIX_WORKING_DIR": str(self.folder),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not self._answers():
            if self.process.poll() is not None:
                raise AssertionError(f"phoenix serve exited with {self.process.returncode}: {self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"phoenix serve did not answer in {START_TIMEOUT:g} s: {self.log()}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    async def spans(self, project: str) -> list[Span]:
        """Every span of ``project``, through Phoenix's REST API."""
        items: list[dict[str, Any]] = []
        cursor = None
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            while True:
                params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
                response = await client.get(f"/v1/projects/{project}/spans", params=params)
                if response.status_code == 404:
                    return []  # no span has reached the project yet
                assert response.status_code == 200, response.text
                body = response.json()
                items.extend(body["data"])
                cursor = body.get("next_cursor")
                if not cursor:
                    return from_phoenix(items)
