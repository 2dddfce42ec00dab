"""A command's error crosses from the owning replica to the one the client asked as the same
error: a 503 there stays a 503 here, ``Retry-After`` included."""

from __future__ import annotations

import pytest

from taskwire.bus.commands import command_result, run_command
from taskwire.errors import StoreUnavailable, Unavailable


async def test_a_store_failure_on_the_owner_is_a_503_with_retry_after_on_the_asker() -> None:
    async def owner(command: dict) -> None:
        raise StoreUnavailable("SQLITE_BUSY: database is locked")

    reply = await run_command(owner, {"name": "run"})
    with pytest.raises(StoreUnavailable) as raised:
        command_result(reply)
    error = raised.value
    assert (error.status_code, error.code) == (503, "store_unavailable")
    assert "SQLITE_BUSY" in error.detail
    assert isinstance(error, Unavailable) and error.retry_after == 1


async def test_an_error_without_retry_after_comes_back_without_one() -> None:
    async def owner(command: dict) -> None:
        raise Unavailable("the owner is moving", code="owner_moving")

    with pytest.raises(Unavailable) as raised:
        command_result(await run_command(owner, {"name": "run"}))
    assert raised.value.retry_after is None and raised.value.code == "owner_moving"
