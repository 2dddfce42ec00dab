"""Agent specs: what ``POST /api/conversations`` accepts as ``agent``, validated (422 otherwise)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, WithJsonSchema

ToolName = Literal["terminal", "file_editor", "task", "think", "finish"]
DEFAULT_TOOLS: list[str] = ["terminal", "file_editor", "task", "think", "finish"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a capable software agent working in a workspace directory. Use the tools to do "
    "the user's task. Delegate self-contained pieces of work with the `task` tool; several "
    "task calls in one response run in parallel. When you are done, call `finish` with your "
    "final answer."
)


def _integral(value: Any) -> Any:
    # JSON Schema counts 48.0 as an integer; strict pydantic would not.
    return int(value) if isinstance(value, float) and value.is_integer() else value



def _number(value: Any) -> Any:
    # strict pydantic takes no int for a float; JSON's 1 is as good as 1.0 here.
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not hold a NUL character (a process cannot be given one)")
    return value


ProcessText = Annotated[str, AfterValidator(_no_nul), WithJsonSchema({"type": "string", "pattern": "^[^\\x00]*$"})]
"""Text handed to a process (its path, arguments, environment, folder): the OS cannot pass a
NUL, so one is refused as the request is read (422), not when the process starts."""


_NAMES_CHECKED: dict[str, Any] = {"additionalProperties": False}
"""For a mapping whose keys are ``ProcessText``: a key outside the pattern is not allowed."""


class _Spec(BaseModel):
    # strict: JSON as written (no 0 for false, no "5" for 5), as the schema says.
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, strict=True)


class _Budgets(_Spec):
    """Limits the agent cannot pass (docs/subagents.md, "Budgets"): ``max_cost_usd``,
    ``max_tokens`` and ``max_seconds`` cover the agent and every sub-agent below it; a budget its
    backend cannot be held to is refused (400 ``budget_not_checkable``)."""

    max_cost_usd: Annotated[float, Field(gt=0), BeforeValidator(_number)] | None = None
    """US dollars the agent and its sub-agents may spend (priced as ``usage.cost_usd`` is)."""
    max_tokens: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = None
    """Tokens (input, output, cache reads and writes) the agent and its sub-agents may use."""
    max_seconds: Annotated[float, Field(gt=0), BeforeValidator(_number)] | None = None
    """Seconds a run of the agent may take (a sub-agent: from its start), its sub-agents' included."""


class LLMSpec(_Spec):
    """Which model a native agent calls; omitted fields come from ``OH_LLM_*``."""

    api: Literal["openai", "anthropic", "scripted"] | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    script: str | None = None
    """For ``scripted``: a path or inline YAML (see docs/scripted-llm.md)."""
    pace: float | None = Field(default=None, ge=0, le=10)
    """For ``scripted``: every turn waits at least this many seconds (demos a person watches)."""
    max_retries: Annotated[int, Field(ge=0, le=100), BeforeValidator(_integral)] | None = None
    """Times a call is retried after a transient failure; default ``OH_LLM_MAX_RETRIES``."""
    retry_max_seconds: float | None = Field(default=None, gt=0, le=86_400)
    """A call stops retrying this long after it started; default ``OH_LLM_RETRY_MAX_SECONDS``."""
    stall_timeout: float | None = Field(default=None, gt=0, le=3_600)
    """Seconds without a byte of the answer before the attempt is retried; default
    ``OH_LLM_STALL_TIMEOUT``."""
    max_concurrency: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_integral)] | None = None
    """Requests open at once to this provider, shared by the whole server (the first agent to
    call a provider sets its cap); default ``OH_LLM_MAX_CONCURRENCY``."""


class NativeAgentSpec(_Budgets):
    """taskwire's own LLM loop with tools."""

    kind: Literal["native"] = "native"
    llm: LLMSpec | None = None
    tools: list[ToolName] | None = None
    """Default: all tools."""
    system_prompt: str | None = None
    max_iterations: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_integral)] = 50
    approval: Literal["never", "always"] | list[ToolName] | None = None
    """Which tool calls wait for a person's answer: ``never``, ``always`` (every tool but
    ``think``, ``finish`` and ``task``) or a list of tool names; default ``OH_APPROVAL``.
    Its sub-agents inherit it and their types may only add to it (docs/permissions.md)."""


class ACPAgentSpec(_Budgets):
    """An external agent spoken to over the Agent Client Protocol (e.g. Claude Code)."""

    kind: Literal["acp"]
    command: ProcessText
    args: list[ProcessText] = Field(default_factory=list)
    env: dict[ProcessText, ProcessText] = Field(default_factory=dict, json_schema_extra=_NAMES_CHECKED)
    """Merged over the server's environment (which passes on no ``OH_*`` setting)."""
    cwd: ProcessText | None = None
    """Default: the conversation's workspace (a relative path is taken from there)."""
    session_mode: str | None = "default"
    """Set on the new session when the agent offers modes (``None``: leave the agent's own).
    Claude Code starts in ``auto``, which asks a classifier model about every Agent call."""
    permissions: Literal["allow", "deny", "ask"] = "allow"
    """How the agent's ``session/request_permission`` is answered: ``allow`` / ``deny`` by
    taskwire at once, ``ask``: a person answers it (a ``PermissionRequestEvent`` in the agent
    that asks; docs/permissions.md)."""
    startup_timeout: float = Field(default=60.0, gt=0)
    """Seconds for the process to start and answer initialize, session/new and set_mode."""
    idle_timeout: float = Field(default=600.0, gt=0)
    """Seconds without any update from the agent before the turn is failed."""
    subagent_text: bool = True
    """Ask the agent for its sub-agents' text (claude-agent-acp's ``forwardSubagentText``); it
    lands in the sub-agents' own streams, never in the parent's message."""
    max_iterations: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = None
    """Refused (400 ``budget_not_checkable``): an ACP agent does not report its model calls."""
    subagent_sessions: Literal["auto", "off"] = "auto"
    """``auto``: declare the subagents RFD's ``clientCapabilities.subagents`` in ``initialize``;
    an agent that then serves its sub-agents as child sessions gets each one mapped onto a
    taskwire sub-agent (with its work state, and cancellable alone when it says so). ``off``:
    never declare it (the flattened form only)."""


ClaudePermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]


class ClaudeSDKAgentSpec(_Budgets):
    """Claude Code driven through the ``claude-agent-sdk`` package (see docs/claude-sdk.md)."""

    kind: Literal["claude_sdk"]
    model: str | None = None
    """Claude Code's ``--model``; default: the CLI's own default."""
    permission_mode: ClaudePermissionMode = "default"
    """Claude Code's permission mode; ``bypassPermissions`` runs every tool unasked."""
    permissions: Literal["ask"] | None = None
    """``ask``: whenever ``permission_mode`` makes Claude Code ask, a person answers (its
    ``can_use_tool`` callback; docs/permissions.md). Unset: Claude Code decides alone, unless
    the tree's ``approval`` policy names the tool."""
    allowed_tools: list[str] | None = None
    """Tools allowed without asking (e.g. ``["Bash", "Read"]``)."""
    cli_path: ProcessText | None = None
    """The Claude Code executable; default: the one bundled with ``claude-agent-sdk``."""
    env: dict[ProcessText, ProcessText] = Field(default_factory=dict, json_schema_extra=_NAMES_CHECKED)
    """Set for the Claude Code process, over the server's environment (e.g. ``ANTHROPIC_BASE_URL``;
    no ``OH_*`` setting is passed on)."""
    system_prompt: str | None = None
    """Replaces Claude Code's system prompt."""
    max_turns: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = None
    max_iterations: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = None
    """Refused (400 ``budget_not_checkable``): Claude Code counts its own turns (``max_turns``)."""
    subagent_text: bool = True
    """Ask Claude Code for its sub-agents' text too (the SDK's ``forward_subagent_text``), not only
    their tool calls; it lands in the sub-agents' own streams, never in the parent's message."""
    idle_timeout: float = Field(default=600.0, gt=0)
    """Seconds without any message from Claude Code before the turn is failed."""
    replay: str | None = None
    """Play a recorded SDK transcript (JSONL, ``tests/claude_sdk/*.sdk.jsonl`` format) instead of
    starting Claude Code: each prompt plays the transcript's next turn. For demos and tests."""


class OpenHandsAgentSpec(_Budgets):
    """OpenHands' own ``Agent`` (openhands-sdk 1.58.2) with its ``task`` sub-agents, run by
    taskwire's driver in ``OH_OPENHANDS_PYTHON`` (see docs/openhands.md)."""

    kind: Literal["openhands"]
    llm: LLMSpec | None = None
    """``model`` (a LiteLLM name, e.g. ``openai/gpt-4o``), ``base_url``, ``api_key``; omitted
    fields come from ``OH_LLM_*`` (``api`` and ``script`` do not apply)."""
    tools: list[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,63}$")]] | None = None
    """OpenHands tool names (``terminal``, ``file_editor``, ``task_tracker``; ``task`` is its
    TaskToolSet). ``think`` and ``finish`` are always there. Unset: OpenHands' own default tools
    (``terminal``, ``file_editor``, ``task_tracker``) and ``task``."""
    subagent_types: list[ProcessText] = Field(default_factory=list)
    """Markdown agent files (OpenHands' format), relative to the workspace, registered besides
    the built-in types and the workspace's ``.agents/agents/*.md``."""
    tool_concurrency_limit: Annotated[int, Field(ge=1, le=64), BeforeValidator(_integral)] = 4
    """Tool calls of one response run at once (so many ``task`` calls run in parallel)."""
    max_iterations: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_integral)] = 50
    """Steps per run of the main agent (OpenHands' ``max_iteration_per_run``)."""
    confirmation: Literal["never", "always"] = "never"
    """OpenHands' confirmation mode for the main agent (its sub-agents inherit it unless their
    type sets ``permission_mode``): each action waits for a person (a ``PermissionRequestEvent``
    in the agent that asks)."""
    startup_timeout: float = Field(default=120.0, gt=0)
    """Seconds for the driver to import OpenHands and build the conversation."""


def _kind(value: Any) -> Any:
    """The spec's ``kind``; an object without one is a native agent (its ``kind`` has a default)."""
    if isinstance(value, dict):
        return value.get("kind", "native")
    return getattr(value, "kind", None)


AgentSpec = Annotated[
    Union[
        Annotated[NativeAgentSpec, Tag("native")],
        Annotated[ACPAgentSpec, Tag("acp")],
        Annotated[ClaudeSDKAgentSpec, Tag("claude_sdk")],
        Annotated[OpenHandsAgentSpec, Tag("openhands")],
    ],
    Discriminator(_kind, custom_error_type="invalid_agent_kind",
                  custom_error_message="agent.kind must be native, acp, claude_sdk or openhands"),
]


def redact(agent: dict[str, Any]) -> dict[str, Any]:
    """An agent spec fit to show: secrets replaced."""
    shown = dict(agent)
    llm = shown.get("llm")
    if isinstance(llm, dict) and llm.get("api_key"):
        shown["llm"] = {**llm, "api_key": "***"}
    if isinstance(shown.get("env"), dict):
        shown["env"] = {k: ("***" if _secret(k) else v) for k, v in shown["env"].items()}
    return shown


def _secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in ("KEY", "TOKEN", "SECRET", "PASSWORD"))
