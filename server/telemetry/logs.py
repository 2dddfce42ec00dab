"""Log lines: plain text, or one JSON object per line (``OH_LOG_FORMAT=json``).

Every line carries the ``conversation_id``, ``subagent_id`` and ``trace_id`` of the run it was
written in, where there is one (``server/telemetry/logcontext.py``).
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import TextIO

from . import logcontext

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(taskwire_context)s"
INCOMPLETE_RESPONSE = "ASGI callable returned without completing response"
"""What uvicorn logs, at error, when an app returns before it has ended its response."""

_ended_early: ContextVar[bool] = ContextVar("taskwire_response_ended_early", default=False)


def response_ended_early() -> None:
    """Say that the response being served is left unfinished on purpose (a client cut off for
    not reading, already logged with its reason): uvicorn's error line about it is dropped."""
    _ended_early.set(True)


class EndedEarlyFilter(logging.Filter):
    """On ``uvicorn.error``: drops ``INCOMPLETE_RESPONSE`` for a response ended early on
    purpose (uvicorn logs it in the task that served the response, so the flag is seen)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_ended_early.get() and record.getMessage().startswith(INCOMPLETE_RESPONSE))


def install_ended_early_filter() -> None:
    """Put ``EndedEarlyFilter`` on uvicorn's error logger, once per process."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, EndedEarlyFilter) for f in logger.filters):
        logger.addFilter(EndedEarlyFilter())


class RunContextFilter(logging.Filter):
    """Copies the run's ids onto each record when it is made (a handler may format it later)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = logcontext.current()
        record.taskwire = context
        record.taskwire_context = "".join(f" {k}={v}" for k, v in context.items())
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time``, ``level``, ``logger``, ``message``, the run's ids,
    and ``exception`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "taskwire", None) or logcontext.current())
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(log_format: str, level: str, stream: TextIO | None = None) -> logging.Handler:
    """Send every log line (uvicorn's too) to ``stream`` (stderr) in ``log_format``, from
    ``level`` up. For ``taskwire serve``: logging is the process's, not one app's."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(RunContextFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    return handler
