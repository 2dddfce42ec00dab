"""Both HTTP clients retry what a real provider's transient failures look like, against
``mock-llm``'s faults over real HTTP; and give up at once on what another try cannot cure."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from taskwire.errors import LLMError
from taskwire.llm.base import CallAbandoned, RetryNotice
from taskwire.llm.gates import ProviderGates
from taskwire.llm.retry import RetryPolicy, next_delay, retry_after_seconds, retryable_status
from tests.llm.conftest import serve_mock
from tests.llm.test_clients import DIALECTS, ask, one_lane
from tests.services import wait_until

QUICK = RetryPolicy(max_retries=3, base_delay=0.05, max_delay=0.2)
"""Short back-offs: these tests check what is retried, not how long it waits."""
ANSWER = {"text": "alpha beta gamma delta epsilon zeta"}


class Observer:
    """A ``CallObserver`` that keeps every notice (and can say to give up)."""

    def __init__(self, go_on: bool = True) -> None:
        self.notices: list[RetryNotice] = []
        self.go_on = go_on

    async def retrying(self, notice: RetryNotice) -> None:
        self.notices.append(notice)

    async def wait(self, seconds: float) -> bool:
        if self.go_on:
            await asyncio.sleep(seconds)
        return self.go_on


FAULTS: dict[str, tuple[dict[str, Any], str, bool]] = {
    # turn fields, the reason retried for, whether the failed attempt streamed text
    "reset": ({"fault": "reset"}, "connection", False),
    "stall": ({"fault": "stall"}, "stalled", True),
    "cut": ({"fault": "cut"}, "broken_stream", True),
    "503": ({"error": "busy", "status": 503}, "503", False),
    "529": ({"error": "overloaded", "status": 529}, "529", False),
    "429": ({"error": "slow down", "status": 429, "retry_after": 0.1}, "429", False),
    "408": ({"error": "too slow", "status": 408}, "408", False),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_transient_fault_is_retried_and_the_answer_used_once(dialect: str, fault: str, tmp_path: Path) -> None:
    turn, reason, streamed = FAULTS[fault]
    async with serve_mock(one_lane({**ANSWER, **turn, "fail_times": 1}), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=QUICK, stall_timeout=0.5)
        observer, deltas = Observer(), []

        async def on_delta(text: str) -> None:
            deltas.append(text)

        response = await llm.complete(ask("hi"), on_delta, observer)
        await llm.aclose()
        requests = mock.requests()
    assert response.text == ANSWER["text"]
    assert [(n.attempt, n.max_attempts, n.reason, n.discard_text) for n in observer.notices] == [(2, 4, reason, streamed)]
    assert (observer.notices[0].status is not None) == fault.isdigit()
    assert [r["turn"] for r in requests] == [0, 0]
    # What streamed after the retry notice is the whole answer, once.
    assert "".join(deltas).endswith(ANSWER["text"])
    assert ("".join(deltas) != ANSWER["text"]) == streamed


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_retry_after_is_honoured_as_the_mock_logs_it(dialect: str, tmp_path: Path) -> None:
    turn = {**ANSWER, "error": "rate limited", "status": 429, "retry_after": 2, "fail_times": 1}
    async with serve_mock(one_lane(turn), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=QUICK)
        observer = Observer()
        await llm.complete(ask("hi"), observer=observer)
        await llm.aclose()
        first, second = mock.requests()
    assert (first["status"], second["status"]) == (429, 200)
    assert observer.notices[0].delay == 2
    assert second["at"] - first["at"] >= 2.0


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "status, message",
    [(400, "prompt is too long: 250000 tokens > 200000 maximum"), (401, "invalid x-api-key"),
     (403, "no access to this model"), (404, "model not found")],
)
async def test_a_final_error_fails_at_once_with_the_providers_message(
    dialect: str, status: int, message: str, tmp_path: Path
) -> None:
    async with serve_mock(one_lane({"error": message, "status": status}), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=QUICK)
        observer = Observer()
        with pytest.raises(LLMError) as caught:
            await llm.complete(ask("hi"), observer=observer)
        await llm.aclose()
        assert len(mock.requests()) == 1
    assert f"HTTP {status}" in caught.value.detail and message in caught.value.detail
    assert observer.notices == []


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_when_retries_run_out_the_error_says_so(dialect: str, tmp_path: Path) -> None:
    async with serve_mock(one_lane({"error": "down for maintenance", "status": 503}), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=QUICK)
        observer = Observer()
        with pytest.raises(LLMError) as caught:
            await llm.complete(ask("hi"), observer=observer)
        await llm.aclose()
        assert len(mock.requests()) == 4
    assert "down for maintenance" in caught.value.detail
    assert "gave up after 4 attempts" in caught.value.detail
    assert [n.attempt for n in observer.notices] == [2, 3, 4]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_wait_past_the_retry_time_limit_fails_now(dialect: str, tmp_path: Path) -> None:
    turn = {"error": "come back in an hour", "status": 429, "retry_after": 3600}
    async with serve_mock(one_lane(turn), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=RetryPolicy(max_retries=5, max_seconds=60))
        with pytest.raises(LLMError, match="would pass the 60 s retry limit"):
            await llm.complete(ask("hi"), observer=Observer())
        await llm.aclose()
        assert len(mock.requests()) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_pause_during_a_back_off_abandons_the_call(dialect: str, tmp_path: Path) -> None:
    turn = {"error": "rate limited", "status": 429, "retry_after": 30}
    async with serve_mock(one_lane(turn), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect)
        observer = Observer(go_on=False)
        with pytest.raises(CallAbandoned):
            await llm.complete(ask("hi"), observer=observer)
        await llm.aclose()
        assert len(mock.requests()) == 1
    assert [(n.reason, n.delay) for n in observer.notices] == [("429", 30)]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_429_wait_is_shared_by_every_model_of_the_server(dialect: str, tmp_path: Path) -> None:
    script = {"lanes": [
        {"name": "first", "match": {"first_user_contains": "first"},
         "turns": [{"text": "one", "error": "rate limited", "status": 429, "retry_after": 1.5, "fail_times": 1}]},
        {"name": "second", "match": {"first_user_contains": "second"}, "turns": [{"text": "two"}]},
    ]}
    gates = ProviderGates()
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        first, second = (mock.client(dialect, retry=QUICK, gates=gates) for _ in range(2))
        call = asyncio.ensure_future(first.complete(ask("first"), observer=Observer()))
        await wait_until(lambda: len(mock.requests()) == 1, timeout=30, what="the first request")
        await wait_until(lambda: gates.gate(first.url, _key()).closed_until > 0, timeout=30, what="the 429")
        assert (await second.complete(ask("second"))).text == "two"
        assert (await call).text == "one"
        for llm in (first, second):
            await llm.aclose()
        by_lane = {(r["lane"], r["status"]): r["at"] for r in mock.requests()}
    assert by_lane[("second", 200)] - by_lane[("first", 429)] >= 1.5
    assert gates.waits == 1  # the second model (the first waited in its own back-off)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_max_concurrency_caps_open_requests_to_a_provider(dialect: str, tmp_path: Path) -> None:
    script = {"lanes": [{"name": "main", "turns": [{"text": "slow", "delay": 0.3}], "repeat": True}]}
    gates = ProviderGates()
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        models = [mock.client(dialect, gates=gates, max_concurrency=1) for _ in range(3)]
        await asyncio.gather(*(m.complete(ask("hi")) for m in models))
        for m in models:
            await m.aclose()
        arrivals = sorted(r["at"] for r in mock.requests())
    assert len(arrivals) == 3
    assert all(later - earlier >= 0.3 for earlier, later in zip(arrivals, arrivals[1:]))


def test_gates_of_two_servers_are_apart() -> None:
    one, two = ProviderGates(), ProviderGates()
    one.gate("http://x/v1/messages", "k").hold(30)
    assert two.gate("http://x/v1/messages", "k").closed_until == 0
    assert one.gate("http://x/v1/messages", "other key").closed_until == 0


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert retry_after_seconds({"retry-after": "4"}) == 4
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": format_datetime(now + timedelta(seconds=20), usegmt=True)}, now) == 20
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_back_off_doubles_with_jitter_up_to_its_cap_unless_the_provider_says() -> None:
    policy = RetryPolicy(base_delay=1, max_delay=8)
    for attempt, ceiling in ((1, 1), (2, 2), (3, 4), (4, 8), (9, 8)):
        delay = next_delay(policy, attempt, None)
        assert 0.75 * ceiling <= delay <= ceiling
    assert next_delay(policy, 5, 42.0) == 42.0


def test_what_is_retried() -> None:
    assert all(retryable_status(s) for s in (408, 409, 429, 500, 502, 503, 504, 529))
    assert not any(retryable_status(s) for s in (400, 401, 403, 404, 413, 422))


def _key() -> str:
    import hashlib

    return hashlib.sha256(b"test").hexdigest()[:16]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_calls_cancelled_holding_or_awaiting_a_slot_leave_the_cap_whole(dialect: str, tmp_path: Path) -> None:
    script = {"lanes": [
        {"name": "slow", "match": {"first_user_contains": "slow"}, "turns": [{"text": "late", "delay": 30}], "repeat": True},
        {"name": "fast", "match": {"first_user_contains": "fast"}, "turns": [{"text": "quick"}]},
    ]}
    gates = ProviderGates()
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        models = [mock.client(dialect, gates=gates, max_concurrency=1) for _ in range(3)]
        holding = asyncio.ensure_future(models[0].complete(ask("slow")))
        await wait_until(lambda: len(mock.requests()) == 1, timeout=30, what="the first call holding the slot")
        waiting = asyncio.ensure_future(models[1].complete(ask("slow")))
        await asyncio.sleep(0)  # it waits for the slot now
        for call in (waiting, holding):
            call.cancel()
        await asyncio.gather(holding, waiting, return_exceptions=True)
        assert (await asyncio.wait_for(models[2].complete(ask("fast")), 30)).text == "quick"
        for model in models:
            await model.aclose()
