"""Script files a request names: read only under the config folder and the workspace roots,
and never quoted in an error, so ``script: /etc/shadow`` reveals nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taskwire.errors import LLMError
from taskwire.llm import ScriptedLLM, make_llm
from taskwire.llm.script import MAX_SCRIPT_BYTES
from taskwire.settings import Settings
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, wait_for_status

SECRET = "hunter2-do-not-print"
GOOD = "lanes:\n  - name: main\n    turns:\n      - text: hi\n"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    (tmp_path / "workspace").mkdir()
    return Settings(workspace_path=tmp_path / "workspace", llm_api="scripted", llm_script=None)


def refusal(settings: Settings, script: str) -> LLMError:
    with pytest.raises(LLMError) as refused:
        make_llm({"script": script}, settings)
    assert SECRET not in refused.value.detail
    return refused.value


def test_a_script_under_the_workspace_or_the_config_folder_loads(settings: Settings) -> None:
    (settings.workspace_path / "mine.yaml").write_text(GOOD)
    llm = make_llm({"script": str(settings.workspace_path / "mine.yaml")}, settings)
    assert isinstance(llm, ScriptedLLM) and llm.script.spec.lanes[0].name == "main"
    assert isinstance(make_llm({"script": "config/demo/hello.yaml"}, settings), ScriptedLLM)


def test_a_script_under_a_listed_workspace_root_loads_and_one_beside_it_does_not(tmp_path: Path) -> None:
    root, beside = tmp_path / "projects", tmp_path / "other"
    for folder in (root, beside):
        folder.mkdir()
        (folder / "s.yaml").write_text(GOOD)
    settings = Settings(workspace_path=tmp_path / "workspace", workspace_roots=[root], llm_api="scripted", llm_script=None)
    assert isinstance(make_llm({"script": str(root / "s.yaml")}, settings), ScriptedLLM)
    assert refusal(settings, str(beside / "s.yaml")).code == "script_outside_roots"


def test_a_file_outside_the_roots_is_refused_unread(settings: Settings, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(f"lanes: {SECRET}\n")
    (settings.workspace_path / "link.yaml").symlink_to(outside)
    for script in ["/etc/passwd", str(outside), str(settings.workspace_path / "link.yaml"),
                   str(settings.workspace_path / ".." / "outside.yaml")]:
        assert refusal(settings, script).code == "script_outside_roots"


def test_the_operators_own_script_may_lie_anywhere(tmp_path: Path) -> None:
    own = tmp_path / "operator.yaml"
    own.write_text(GOOD)
    settings = Settings(workspace_path=tmp_path / "workspace", llm_api="scripted", llm_script=str(own))
    assert isinstance(make_llm(None, settings), ScriptedLLM)


@pytest.mark.parametrize(
    "content, problem",
    [
        (f"password: {SECRET}\nuser: root\n", "expected a mapping with `lanes`"),
        (f"root:x:0:0:{SECRET}:/root:/bin/bash\n", "expected a mapping with `lanes`"),
        (f"key: [unclosed {SECRET}\n", "not valid YAML at line 2, column 1"),
        (f"lanes: [\n  '{SECRET}\n", "not valid YAML"),
    ],
)
def test_a_file_that_is_no_script_is_not_quoted(settings: Settings, content: str, problem: str) -> None:
    path = settings.workspace_path / "notes.txt"
    path.write_text(content)
    error = refusal(settings, str(path))
    assert error.code == "invalid_script" and problem in error.detail
    said = error.detail.replace(str(path), "")
    assert "password" not in said and "root" not in said


def test_what_cannot_be_a_script_file_is_refused_before_it_is_read(settings: Settings) -> None:
    fifo = settings.workspace_path / "pipe.yaml"
    os.mkfifo(fifo)  # reading it would block the server
    big = settings.workspace_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_SCRIPT_BYTES + 1))
    binary = settings.workspace_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe" + SECRET.encode())
    codes = {name: refusal(settings, str(settings.workspace_path / name)).code for name in ["pipe.yaml", "big.yaml", "binary.yaml"]}
    assert codes == dict.fromkeys(codes, "script_unreadable")
    assert refusal(settings, str(settings.workspace_path / "absent.yaml")).code == "script_not_found"
    assert refusal(settings, str(settings.workspace_path / "nul\x00.yaml")).code == "script_unreadable"


async def test_a_conversation_naming_etc_shadow_ends_with_a_clear_agent_error(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent("/etc/shadow"), initial_message="go")
    assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "error"
    (error,) = await all_events(server, info["id"], kind="AgentErrorEvent")
    assert error["code"] == "script_outside_roots" and "/etc/shadow" in error["error"]
