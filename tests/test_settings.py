"""Settings: environment over the TOML file over defaults; held per app, not per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.api.app import create_app
from server.settings import Settings


def test_environment_wins_over_the_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "taskwire.toml"
    config.write_text('port = 9001\nforward_subagent_events = true\nws_queue_size = 77\n')
    monkeypatch.setenv("OH_CONFIG_FILE", str(config))
    monkeypatch.setenv("OH_PORT", "9002")
    monkeypatch.setenv("OH_SESSION_API_KEYS", '["a", "b"]')
    settings = Settings()
    assert settings.port == 9002  # the environment wins
    assert settings.forward_subagent_events is True and settings.ws_queue_size == 77  # from the file
    assert settings.session_api_keys == ["a", "b"]
    assert settings.max_subscribers == 1000  # the default


def test_a_missing_config_file_means_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OH_CONFIG_FILE", str(tmp_path / "absent.toml"))
    assert Settings().forward_subagent_events is False


def test_two_apps_keep_their_own_settings(tmp_path: Path) -> None:
    one = create_app(Settings(workspace_path=tmp_path / "a", forward_subagent_events=True))
    two = create_app(Settings(workspace_path=tmp_path / "b"))
    assert one.state.settings.forward_subagent_events is True
    assert two.state.settings.forward_subagent_events is False
