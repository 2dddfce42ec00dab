"""When a model call is tried again, and how long it waits first. No I/O.

A provider's transient failures (a connection reset, a timeout, a stalled stream, ``408``,
``409``, ``429``, ``5xx`` and Anthropic's ``529 overloaded``, an ``overloaded_error`` in the
stream) leave the HTTP layer as ``TransientLLMError``; everything else (``400``, ``401``,
``403``, ``404``, a context-length error, a malformed answer) as a plain ``LLMError`` that
fails the call at once. ``RetryPolicy`` says how often and how long a call keeps trying, and
``next_delay`` how long it waits before the next attempt: the provider's own ``Retry-After``
(or ``retry-after-ms``) when it gives one, else exponential back-off with jitter.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from ..errors import LLMError

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Statuses worth another try besides every ``5xx`` (``529`` included)."""
TRANSIENT_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "server_error", "timeout"})
"""Error types a provider reports inside a stream that say "try again" (Anthropic's names;
OpenAI-compatible servers use ``server_error``)."""


class TransientLLMError(LLMError):
    """A model call failed in a way another attempt may not: it is retried while the
    ``RetryPolicy`` allows, and then ends the call as an ``LLMError`` would."""

    def __init__(self, detail: str, *, reason: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        """Short and stable, for events and metrics: ``429``, ``503``, ``connection``,
        ``timeout``, ``stalled``, ``broken_stream``, ``overloaded_error`` ..."""
        self.status = status
        """The HTTP status, when the provider answered one."""
        self.retry_after = retry_after
        """Seconds the provider asked to wait (``Retry-After``), if it said."""


@dataclass(frozen=True)
class RetryPolicy:
    """How a model call keeps trying (settings ``OH_LLM_MAX_RETRIES``,
    ``OH_LLM_RETRY_MAX_SECONDS``; per agent ``llm.max_retries``, ``llm.retry_max_seconds``)."""

    max_retries: int = 6
    """Attempts after the first; 0 turns retries off."""
    max_seconds: float = 300.0
    """No attempt starts, and no wait is begun that would end, later than this many seconds
    after the call started: the call fails instead."""
    base_delay: float = 1.0
    """The first back-off; it doubles with each attempt."""
    max_delay: float = 30.0
    """The longest back-off taken without the provider asking for it."""

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1


def stream_error(kind: object, message: object) -> LLMError:
    """An error a provider reported inside its stream: transient for the types that say so."""
    detail = f"LLM stream reported an error: {kind}: {message}" if kind else f"LLM stream reported an error: {message}"
    if kind in TRANSIENT_STREAM_ERRORS:
        return TransientLLMError(detail, reason=str(kind))
    return LLMError(detail)


def retryable_status(status: int) -> bool:
    """Whether an HTTP error status is worth another attempt."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """OpenAI's ``x-should-retry`` (``true``/``false``), which overrides the status; ``None``
    when absent."""
    value = headers.get("x-should-retry", "").strip().lower()
    return True if value == "true" else False if value == "false" else None


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a provider asked for: ``retry-after-ms`` (milliseconds), else ``retry-after``
    (seconds or an HTTP date); ``None`` when it named none or named it unreadably."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def next_delay(policy: RetryPolicy, attempt: int, retry_after: float | None, rng: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): the provider's
    ``retry_after`` if given, else ``base_delay * 2 ** (attempt - 1)`` capped at ``max_delay``,
    less up to a quarter at random so agents that failed together do not return together."""
    if retry_after is not None:
        return retry_after
    backoff = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
    return backoff * (1 - 0.25 * (rng or random).random())


def describe_wait(seconds: float) -> str:
    """``4 s``, ``0.5 s``: a wait as a person reads it."""
    return f"{seconds:.0f} s" if seconds >= 1.5 else f"{seconds:.1f} s"
