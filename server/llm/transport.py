"""``ModelHTTP``: the server's one HTTP client for model calls, over aiohttp.

Model calls are the server's busiest HTTP: at 50 trees a model call cost 2.0 ms of the client's
CPU through httpx (its request building and cookie handling alone 1.0 to 1.35 ms) and 0.5 ms
through aiohttp, whose HTTP parser is C (``bench/llm_client.py``, BENCHMARKS.md). What users rely
on is kept:

- proxies from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, as aiohttp's
  ``trust_env`` reads them);
- TLS verified as httpx verifies it (``httpx.create_ssl_context()``: certifi's roots, or
  ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once per server and only for ``https`` URLs;
- timeouts: ``connect`` for a connection (and a free slot), ``stall`` for each read of the
  answer (no byte for that long: ``TransientLLMError`` ``stalled``), and both together for the
  request's sending, which aiohttp does not time on its own.

Transport failures leave as ``TransientLLMError`` (worth another attempt) or ``LLMError``.
"""

from __future__ import annotations

import asyncio
import io
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import httpx

from .. import __version__
from ..errors import LLMError
from .retry import TransientLLMError


LARGE_BODY = 1 << 20
"""Bodies this large are sent from a buffer in pieces (aiohttp writes smaller ones at once)."""


@dataclass(frozen=True)
class Timeouts:
    """One model's timeouts, in seconds."""

    connect: float = 120.0
    """To connect (and to wait for a free connection)."""
    stall: float = 90.0
    """Without a byte of the answer, before the first or between two."""


class HTTPAnswer:
    """An answer's status, headers and body as it streams."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self) -> bytes:
        """The whole body (an error answer's)."""
        return await self._response.read()

    async def lines(self) -> AsyncIterator[str]:
        """The body's lines as they arrive, without their ends (any length: a tool call's
        arguments may come in one line of megabytes)."""
        rest = b""
        async for chunk in self._response.content.iter_any():
            *whole, rest = (rest + chunk).split(b"\n")
            for line in whole:
                yield line.decode("utf-8", errors="replace").removesuffix("\r")
        if rest:
            yield rest.decode("utf-8", errors="replace").removesuffix("\r")


class ModelHTTP:
    """Connections to model providers, shared by every model of a server (closed by
    ``aclose``). Made anywhere; its aiohttp session is made on first use, in the loop that uses
    it. No bound on connections; idle ones are kept a while for the next call."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    @property
    def is_closed(self) -> bool:
        return self._closed

    def _open_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise LLMError("the server's model client is closed")
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=True, auto_decompress=True, timeout=aiohttp.ClientTimeout(total=None),
                skip_auto_headers=("User-Agent",), headers={"user-agent": f"taskwire/{__version__}"},
            )
        return self._session

    def _ssl_for(self, url: str) -> ssl.SSLContext | bool:
        if not url.startswith("https:"):
            return True  # aiohttp's default; unused without TLS
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()  # about 40 ms of CPU: once per server
        return self._ssl

    @asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeouts: Timeouts
    ) -> AsyncIterator[HTTPAnswer]:
        """POST ``body``; the answer once its head arrives, released when the block ends.
        Failures, reading the answer's body in the block included, raise ``TransientLLMError``
        or ``LLMError``."""
        session = self._open_session()
        timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.connect, sock_read=timeouts.stall)
        try:
            # The head arrives within connect + stall unless the sending itself hangs.
            async with asyncio.timeout(timeouts.connect + timeouts.stall):
                data = body if len(body) < LARGE_BODY else io.BytesIO(body)
                response = await session.post(url, data=data, headers=headers, timeout=timeout, ssl=self._ssl_for(url))
        except TimeoutError as exc:
            if isinstance(exc, aiohttp.ConnectionTimeoutError):
                raise TransientLLMError(f"LLM at {url} timed out connecting", reason="timeout") from exc
            raise TransientLLMError(f"LLM at {url} stalled: no data for {timeouts.stall:g} s", reason="stalled") from exc
        except aiohttp.ClientError as exc:
            raise _failure(url, exc) from exc
        try:
            yield HTTPAnswer(response)
        except TimeoutError as exc:  # a read of the answer waited past the stall timeout
            raise TransientLLMError(f"LLM at {url} stalled: no data for {timeouts.stall:g} s", reason="stalled") from exc
        except aiohttp.ClientError as exc:
            raise _failure(url, exc) from exc
        finally:
            response.release()

    async def aclose(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None


def _failure(url: str, exc: aiohttp.ClientError) -> LLMError:
    detail = f"LLM request to {url} failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.InvalidURL, aiohttp.ClientSSLError)):
        return LLMError(detail)  # another attempt meets the same certificate or URL
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return TransientLLMError(detail, reason="connection")
    return LLMError(detail)
