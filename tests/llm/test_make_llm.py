"""``make_llm``: the agent's ``llm`` config over the server's ``OH_LLM_*`` settings."""

from __future__ import annotations


import pytest

from taskwire.errors import LLMError
from taskwire.llm import AnthropicLLM, OpenAILLM, ScriptedLLM, make_llm
from taskwire.settings import Settings
from tests.llm.conftest import DEMO


async def test_each_api_gets_its_client_and_missing_fields_come_from_settings() -> None:
    settings = Settings(llm_api="openai", llm_model="m-default", llm_base_url="http://llm.test/v1",
                        llm_api_key="k", llm_timeout=7)
    openai = make_llm({}, settings)
    assert isinstance(openai, OpenAILLM)
    assert (openai.model, openai.url) == ("m-default", "http://llm.test/v1/chat/completions")
    anthropic = make_llm({"api": "anthropic", "model": "claude-x", "base_url": "http://a.test/"}, settings)
    assert isinstance(anthropic, AnthropicLLM)
    assert (anthropic.model, anthropic.url) == ("claude-x", "http://a.test/v1/messages")
    await openai.aclose()
    await anthropic.aclose()


def test_scripted_model_takes_a_path_or_inline_yaml_or_the_settings_script() -> None:
    settings = Settings(llm_api="scripted", llm_script=str(DEMO / "hello.yaml"))
    from_settings = make_llm(None, settings)
    assert isinstance(from_settings, ScriptedLLM)
    assert from_settings.script.spec.lanes[0].name == "main"
    inline = make_llm({"script": "lanes:\n  - {name: solo, turns: [{text: hi}]}\n"}, settings)
    assert inline.script.spec.lanes[0].name == "solo"  # type: ignore[attr-defined]
    paced = make_llm({"pace": 0.6}, settings)
    assert (paced.pace, from_settings.pace) == (0.6, 0.0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"api": "scripted", "script": None}, "needs a script"),
        ({"api": "scripted", "script": "config/no-such-script.yaml"}, "script file not found"),
        ({"api": "cohere"}, "unknown LLM api 'cohere'"),
    ],
)
def test_unusable_config_is_llm_error(config: dict[str, object], reason: str) -> None:
    with pytest.raises(LLMError, match=reason):
        make_llm(config, Settings(llm_api="scripted", llm_script=None))
