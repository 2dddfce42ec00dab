"""With ``OH_FORWARD_SUBAGENT_EVENTS`` off, only the main agent's updates go out, as on the socket:
the same as the main agent's updates with it on."""

from __future__ import annotations

from pathlib import Path

from tests.acp_agent.helpers import SCRIPTS, by_call, drive, embedded_env, stamp, texts

SCRIPT = SCRIPTS / "two_and_nested.yaml"


def _steps(project: Path) -> list[dict]:
    return [{"op": "initialize"}, {"op": "new", "cwd": str(project)}, {"op": "prompt", "text": "Run the demo."},
            {"op": "load", "cwd": str(project)}]


async def test_forwarding_off_shows_only_the_main_agent(tmp_path: Path) -> None:
    off = await drive(_steps(tmp_path / "p"), env=embedded_env(tmp_path / "off", SCRIPT, forwarding=False), folder=tmp_path)
    on = await drive(_steps(tmp_path / "p"), env=embedded_env(tmp_path / "on", SCRIPT), folder=tmp_path)
    assert off.result(2)["stopReason"] == "end_turn"
    shown = off.updates(2)
    assert all(stamp(u) == (None, None) for u in shown)
    assert set(by_call(shown)) == {"call_main_0_0", "call_main_1_0", "call_main_1_1"}
    main_with_forwarding = [u for u in on.updates(2) if stamp(u) == (None, None)]
    assert by_call(shown) == by_call(main_with_forwarding)
    assert texts(shown) == texts(main_with_forwarding)
    assert all(stamp(u) == (None, None) for u in off.updates(3))  # the replay too
