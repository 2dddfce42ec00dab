"""Settings: environment (``OH_`` prefix) over an optional TOML file over defaults.

A ``Settings`` instance lives on the app (``app.state.settings``), never in a module global,
so two servers with different settings run in one process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .permissions.policy import approval_setting
from .resources import DEFAULT_CONFIG_FILE as BUNDLED_CONFIG_FILE
from .resources import PROJECT_ROOT, bundled_file

DEFAULT_CONFIG_FILE = "config/taskwire.toml"
DEFAULT_TOOL_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "USER", "SHELL")
"""What tools inherit from the server's environment unless ``OH_TOOL_ENV_ALLOW`` says otherwise."""


class WebhookSpec(BaseModel):
    """One webhook receiver."""

    url: str
    """Where batches of events are POSTed."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra headers, e.g. an ``Authorization``."""
    kinds: list[str] | None = None
    """Only these event kinds (default all)."""
    batch_size: int = 50
    """At most this many events per POST."""
    flush_interval: float = 0.5
    """Seconds to wait for a batch to fill."""
    max_retries: int = 5
    """Retries (with backoff) before a batch is dropped and logged."""
    queue_size: int = 10_000
    """Events buffered for this receiver; past it the oldest are dropped and counted."""

CHECKOUT_OPENHANDS_PYTHON = PROJECT_ROOT / ".venv-openhands" / "bin" / "python"
"""Where ``make openhands`` builds the OpenHands interpreter in a checkout (in an installed
package ``PROJECT_ROOT`` is site-packages, where none is)."""


class Settings(BaseSettings):
    """Every setting of a taskwire server. Environment variables win over the TOML file."""

    model_config = SettingsConfigDict(
        env_prefix="OH_",
        extra="ignore",
        use_attribute_docstrings=True,
    )

    host: str = "127.0.0.1"
    """Address to bind. A non-loopback address needs ``OH_SESSION_API_KEYS``."""
    port: int = 8000
    """Port to bind."""
    session_api_keys: list[str] = Field(default_factory=list)
    """Accepted API keys (JSON list). Empty: no auth, loopback only."""
    workspace_path: Path = Path("workspace")
    """Where conversations' workspaces and the default SQLite database live."""
    workspace_roots: list[Path] = Field(default_factory=list)
    """More folders a request's ``workspace`` may lie under (JSON list of paths), besides
    ``OH_WORKSPACE_PATH``; anything outside them all is refused (400 ``invalid_workspace``)."""
    database_url: str | None = None
    """``sqlite:///path`` or ``postgresql://...``; default SQLite under the workspace path."""
    redis_url: str | None = None
    """Redis for the bus across replicas; unset: in-process bus."""
    forward_subagent_events: bool = False
    """Publish sub-agent events live on the root conversation's socket (stamped)."""
    plugin_dirs: list[Path] = Field(default_factory=list)
    """Extra plugin folders (Claude-Code plugin layout) for sub-agent types."""
    webhooks: list[WebhookSpec] = Field(default_factory=list)
    """Webhook receivers (JSON list of objects with at least ``url``)."""
    ws_queue_size: int = 10_000
    """Events buffered per WebSocket (or AG-UI SSE) client before it is closed as too slow."""
    max_subscribers: int = 1_000
    """Concurrent live subscribers (sockets, SSE) per server; past it new ones are refused."""
    max_parallel_subagents: int = 8
    """How many sub-agents one LLM response may run at once."""
    max_subagent_depth: int = 5
    """How deep sub-agents may nest."""
    max_body_bytes: int = 1_048_576
    """Largest accepted request body or inbound WebSocket frame."""
    ws_auth_timeout: float = Field(5.0, gt=0)
    """Seconds a socket without a header or query key has to send its ``auth`` frame."""
    max_unauthenticated_sockets: int = Field(256, ge=0)
    """Sockets that may wait for their ``auth`` frame at once; one more turns away the one
    that has waited longest (4029). 0: only header or query keys."""
    ws_send_timeout: float = Field(10.0, gt=0)
    """Seconds a socket may take no data at all before it is closed as too slow (4008)."""
    tool_env_allow: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOL_ENV))
    """Environment variables of the server that tools (``terminal``) inherit (JSON list of
    names); ``OH_*`` never, whatever this says."""
    idle_unload_seconds: float = Field(600.0, ge=0)
    """A root conversation neither running nor used this long is unloaded from memory (its
    backend closed: a peer agent's process ends); it loads again from the store when next
    used. 0 keeps every conversation loaded."""
    replica_id: str | None = None
    """This replica's name in ownership leases; default host name and pid."""
    lease_seconds: float = 15.0
    """A conversation's ownership lapses after this long without renewal."""
    store_timeout: float = Field(10.0, gt=0)
    """Seconds a store operation waits for the database (SQLite's write lock, a PostgreSQL
    connection) before it fails: the request answers 503 ``store_unavailable``."""
    resume_after_store_fault: bool = True
    """A run the store stopped (it could not write) resumes by itself once the store writes
    again; ``false``: it stays ``paused`` (with ``status_reason``) until someone runs it."""
    tracing: bool | None = None
    """Export OpenTelemetry spans (OTLP/HTTP). Unset: on when ``OTEL_EXPORTER_OTLP_ENDPOINT``
    (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set; ``false`` turns it off whatever those say."""
    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object per log line, with ``conversation_id``, ``subagent_id`` and
    ``trace_id`` where the line has them (``taskwire serve``)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """The least severe log lines written. ``INFO``: what the server starts, ends and refuses
    (a line per run start and end, per refused request); ``DEBUG`` adds uvicorn's access log."""
    approval: Annotated[str | list[str], NoDecode] = "never"
    """Which tool calls of a native agent wait for a person when its spec names no
    ``approval``: ``never``, ``always``, or tool names (a JSON list or comma-separated)."""
    approval_timeout_s: float | None = Field(default=None, gt=0)
    """Seconds a permission request waits before it resolves ``timed_out`` (as rejected);
    unset: as long as it takes."""

    llm_api: Literal["openai", "anthropic", "scripted"] = "scripted"
    """Default LLM dialect for native agents."""
    llm_model: str = "scripted"
    """Default model name."""
    llm_base_url: str | None = None
    """Default LLM endpoint."""
    llm_api_key: str | None = None
    """Default LLM key."""
    llm_script: str | None = None
    """Default script (path or inline YAML) when ``OH_LLM_API=scripted``."""
    llm_timeout: float = Field(120.0, gt=0)
    """Seconds an LLM request may take to connect, to send, or to wait for a free connection."""
    llm_stall_timeout: float = Field(90.0, gt=0)
    """Seconds without a byte of a model's answer (before the first, or between two) after
    which the attempt is abandoned and retried like a reset connection."""
    llm_max_retries: int = Field(6, ge=0, le=100)
    """Times a model call is tried again after a transient failure (a reset, a timeout, a
    stall, ``408``, ``409``, ``429``, ``5xx``, ``529``), with exponential back-off and jitter or
    the provider's ``Retry-After``; 0 turns retries off."""
    llm_retry_max_seconds: float = Field(300.0, gt=0)
    """A model call stops retrying once this many seconds have passed since it started (or
    when the next wait would take it past them)."""
    llm_max_concurrency: int | None = Field(None, ge=1)
    """At most this many requests open at once to one provider (endpoint and key), shared by
    every agent of the server; unset: no cap."""
    openhands_python: str | None = None
    """The Python 3.12 interpreter with openhands-sdk/-tools 1.58.2 and taskwire-openhands that
    runs ``kind: openhands`` agents. Unset: the checkout's ``.venv-openhands/bin/python`` when
    ``make openhands`` has built it; empty, or unset with no such venv: none can be created
    (400 ``openhands_unavailable``)."""

    config_file: Path | None = None
    """The TOML file read under the environment (default ``config/taskwire.toml``)."""

    @field_validator("approval", mode="before")
    @classmethod
    def _approval(cls, value: Any) -> str | list[str]:
        return approval_setting(value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = config_file_path()
        toml = TomlConfigSettingsSource(settings_cls, toml_file=path if path.is_file() else None)
        return (init_settings, env_settings, toml)

    @field_validator("openhands_python", mode="before")
    @classmethod
    def _no_python(cls, value: Any) -> Any:
        return value or None  # OH_OPENHANDS_PYTHON= (empty) says "none", even beside a built venv

    @model_validator(mode="after")
    def _checkout_openhands(self) -> Settings:
        # A new user runs `make openhands` then `make run`: no interpreter path to find.
        if "openhands_python" not in self.model_fields_set and CHECKOUT_OPENHANDS_PYTHON.is_file():
            self.openhands_python = str(CHECKOUT_OPENHANDS_PYTHON)
        return self

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @property
    def auth_required(self) -> bool:
        return bool(self.session_api_keys)

    @property
    def config_dir(self) -> Path:
        """The folder of the TOML settings file (where the demo scripts live)."""
        return (self.config_file or config_file_path()).resolve().parent

    def workspace_roots_resolved(self) -> list[Path]:
        """Every folder a workspace may lie under, resolved: ``workspace_path`` first."""
        return [self.workspace_path.resolve(), *(root.resolve() for root in self.workspace_roots)]

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to SQLite under the workspace path."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.workspace_path / 'taskwire.db').resolve()}"

    def llm_defaults(self) -> dict[str, Any]:
        """The LLM config a native agent gets when its request names none."""
        return {
            "api": self.llm_api,
            "model": self.llm_model,
            "base_url": self.llm_base_url,
            "api_key": self.llm_api_key,
            "script": bundled_file(self.llm_script) if self.llm_script else None,
            "max_retries": self.llm_max_retries,
            "retry_max_seconds": self.llm_retry_max_seconds,
            "stall_timeout": self.llm_stall_timeout,
            "max_concurrency": self.llm_max_concurrency,
        }


def config_file_path() -> Path:
    """The settings file: ``OH_CONFIG_FILE`` (read only if it exists), else
    ``config/taskwire.toml`` in the current folder (a checkout), else the bundled one (an
    installed package started anywhere)."""
    named = os.environ.get("OH_CONFIG_FILE")
    if named:
        return Path(named)
    here = Path(DEFAULT_CONFIG_FILE)
    return here if here.is_file() else BUNDLED_CONFIG_FILE
