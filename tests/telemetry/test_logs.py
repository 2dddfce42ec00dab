"""Log lines name the run they were written in: JSON (``OH_LOG_FORMAT=json``) or text."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from typing import Iterator

import pytest

from taskwire.telemetry import logcontext
from taskwire.telemetry.logs import JsonFormatter, RunContextFilter, TEXT_FORMAT


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RunContextFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.telemetry.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream, handler
    finally:
        logger.removeHandler(handler)


async def test_a_run_and_the_tasks_it_starts_log_its_ids(captured: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, _ = captured

    async def subagent() -> None:
        logcontext.bind(subagent_id="sub-1")
        logger.info("in the sub-agent")

    async def run() -> None:
        logcontext.bind(conversation_id="conv-1", subagent_id=None, trace_id="ab" * 16)
        logger.info("in the run")
        await asyncio.create_task(subagent())  # inherits the run's ids, adds its own
        logger.warning("back in the run")

    await asyncio.create_task(run())
    logger.info("outside any run")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(l["message"], l.get("conversation_id"), l.get("subagent_id"), l.get("trace_id")) for l in lines] == [
        ("in the run", "conv-1", None, "ab" * 16),
        ("in the sub-agent", "conv-1", "sub-1", "ab" * 16),
        ("back in the run", "conv-1", None, "ab" * 16),
        ("outside any run", None, None, None),
    ]
    assert lines[2]["level"] == "warning" and lines[2]["logger"] == "tests.telemetry.logs"
    assert lines[0]["time"].endswith("Z")


def test_an_exception_is_one_line_with_its_traceback(captured: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, _ = captured
    try:
        raise ValueError("bad \"input\"\nsecond line")
    except ValueError:
        logger.exception("it failed")
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["level"] == "error" and "ValueError: bad" in entry["exception"]


def test_text_lines_carry_the_ids_too(captured: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, handler = captured
    handler.setFormatter(logging.Formatter(TEXT_FORMAT))

    async def run() -> None:
        logcontext.bind(conversation_id="conv-2")
        logger.info("hello")

    asyncio.run(run())
    assert stream.getvalue().rstrip().endswith("tests.telemetry.logs: hello conversation_id=conv-2")
