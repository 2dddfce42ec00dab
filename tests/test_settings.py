"""Settings: environment over the TOML file over defaults; held per app, not per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskwire.api.app import create_app
from taskwire.resources import CONFIG_DIR
from taskwire.settings import Settings


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


def test_started_in_a_folder_without_config_it_reads_the_bundled_settings_and_finds_their_demo_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OH_CONFIG_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    assert settings.llm_script == "config/demo/two_subagents.yaml"  # as the bundled file says
    script = Path(settings.llm_defaults()["script"])
    assert script.is_absolute() and script.is_file() and script == CONFIG_DIR / "demo" / "two_subagents.yaml"
    assert settings.config_dir == CONFIG_DIR


def test_a_script_in_the_current_folder_wins_over_the_bundled_one_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OH_CONFIG_FILE", str(tmp_path / "absent.toml"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config" / "demo").mkdir(parents=True)
    (tmp_path / "config" / "demo" / "hello.yaml").write_text("steps: []\n")
    assert Settings(llm_script="config/demo/hello.yaml").llm_defaults()["script"] == "config/demo/hello.yaml"


def test_two_apps_keep_their_own_settings(tmp_path: Path) -> None:
    one = create_app(Settings(workspace_path=tmp_path / "a", forward_subagent_events=True))
    two = create_app(Settings(workspace_path=tmp_path / "b"))
    assert one.state.settings.forward_subagent_events is True
    assert two.state.settings.forward_subagent_events is False


def test_the_checkouts_openhands_venv_is_found_without_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `make openhands` builds is used by `make run` / `taskwire serve` from the checkout.
    from taskwire.settings import CHECKOUT_OPENHANDS_PYTHON

    monkeypatch.delenv("OH_OPENHANDS_PYTHON", raising=False)
    if not CHECKOUT_OPENHANDS_PYTHON.is_file():
        pytest.skip("`make openhands` has not built .venv-openhands in this checkout")
    assert Settings().openhands_python == str(CHECKOUT_OPENHANDS_PYTHON)
    monkeypatch.setenv("OH_OPENHANDS_PYTHON", "/opt/my-openhands/bin/python")
    assert Settings().openhands_python == "/opt/my-openhands/bin/python"  # the setting wins
    monkeypatch.setenv("OH_OPENHANDS_PYTHON", "")
    assert Settings().openhands_python is None  # empty: none, even beside the built venv
