"""The scripted demo scenarios (``config/demo/*.yaml``) and ``GET /api/demo``.

A scenario is started like any conversation: ``POST /api/conversations`` with the body
``scenario_request`` builds (a native agent on the scripted LLM with the scenario's script).
The viewer and ``taskwire demo`` both start scenarios that way; this module only names them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from fastapi import APIRouter, Depends, Query, Request

from .auth import require_api_key
from .openapi import errors
from ..resources import CONFIG_DIR

DEMO_DIR = CONFIG_DIR / "demo"

SCENARIOS = {
    "two_subagents": "Run the demo: a command, then two sub-agents in parallel.",
    "nested": "Run the nested demo: a sub-agent that delegates again.",
    "hello": "Say hello with a command.",
}
"""The native scenarios, by script name, with the first message each is started with."""

DEFAULT_SCENARIO = "two_subagents"

router = APIRouter(tags=["demo"])


def scenario_script(name: str) -> Path:
    """The script file of scenario ``name``."""
    return DEMO_DIR / f"{name}.yaml"


def scenario_request(name: str, pace: float = 0.0) -> dict[str, Any]:
    """The ``POST /api/conversations`` body that starts scenario ``name``: the script by its
    file (so a conversation names its scenario, not a copy of it), and with ``pace`` every model
    turn waiting that many seconds first, so a person can watch the run unfold."""
    llm: dict[str, Any] = {"api": "scripted", "script": str(scenario_script(name))}
    if pace > 0:
        llm["pace"] = pace
    return {"agent": {"kind": "native", "llm": llm}, "initial_message": SCENARIOS[name]}


def _describe(path: Path) -> str:
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    return str(spec.get("description") or "") if isinstance(spec, dict) else ""


@router.get("/api/demo", dependencies=[Depends(require_api_key)], responses=errors(401))
async def list_demo_scenarios(
    request: Request,
    pace: float = Query(default=0.0, ge=0, le=10, description="Seconds each model turn waits, to watch it unfold."),
) -> dict[str, Any]:
    """The demo scenarios this server offers: all of them when its LLM is the scripted one, none
    otherwise. Each carries the ``request`` body that starts it on ``POST /api/conversations``."""
    if request.app.state.settings.llm_api != "scripted":
        return {"available": False, "default": None, "scenarios": []}
    scenarios = []
    for name in SCENARIOS:
        path = scenario_script(name)
        if not path.is_file():
            continue  # a scenario removed from this installation
        description = await asyncio.to_thread(_describe, path)
        body = scenario_request(name, pace)
        scenarios.append({"name": name, "description": description, "request": body})
    default = DEFAULT_SCENARIO if any(s["name"] == DEFAULT_SCENARIO for s in scenarios) else None
    return {"available": bool(scenarios), "default": default, "scenarios": scenarios}
