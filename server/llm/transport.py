"""``ModelHTTP``: the server's one HTTP client for model calls, over aiohttp.

Model calls are the server's busiest HTTP: at 50 trees a model call cost 2.0 ms of the client's
CPU through httpx (its request building and cookie handling alone 1.0 to 1.35 ms) and 0.5 ms
through aiohttp, whose HTTP parser is C (``bench/llm_client.py``, BENCHMARKS.md). What users rely
on is kept:

- proxies from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``,
  credentials in the proxy's URL), read once per endpoint (aiohttp's ``trust_env`` read them, and
  ``~/.netrc`` in a thread, for every request);
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
import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
import httpx
from yarl import URL

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
        self._proxies: dict[tuple[str, str], tuple[URL | None, aiohttp.BasicAuth | None]] = {}
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
                connector=connector, auto_decompress=True, timeout=aiohttp.ClientTimeout(total=None),
                skip_auto_headers=("User-Agent",), headers={"user-agent": f"taskwire/{__version__}"},
            )
        return self._session

    def _proxy_for(self, url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
        """The proxy the environment names for ``url`` (``None``: straight there), and its
        credentials."""
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "")
        found = self._proxies.get(key)
        if found is None:
            found = self._proxies[key] = environment_proxy(parts.scheme, parts.hostname or "")
        return found

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
                proxy, proxy_auth = self._proxy_for(url)
                response = await session.post(url, data=data, headers=headers, timeout=timeout, ssl=self._ssl_for(url),
                                              proxy=proxy, proxy_auth=proxy_auth)
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


def environment_proxy(scheme: str, host: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy for ``scheme://host`` by the environment's ``*_PROXY`` and ``NO_PROXY``, as
    urllib reads them; ``LLMError`` for a kind aiohttp cannot use (SOCKS)."""
    proxies = urllib.request.getproxies_environment()
    named = proxies.get(scheme) or proxies.get("all")
    if not named or urllib.request.proxy_bypass_environment(host, proxies):
        return None, None
    proxy = URL(named if "://" in named else f"http://{named}")
    if proxy.scheme not in ("http", "https"):
        raise LLMError(f"the proxy {proxy.with_user(None)} is not an HTTP proxy (the model client speaks to HTTP proxies only)")
    auth = aiohttp.BasicAuth(proxy.user, proxy.password or "") if proxy.user else None
    return proxy.with_user(None), auth


def _failure(url: str, exc: aiohttp.ClientError) -> LLMError:
    detail = f"LLM request to {url} failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.InvalidURL, aiohttp.ClientSSLError)):
        return LLMError(detail)  # another attempt meets the same certificate or URL
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return TransientLLMError(detail, reason="connection")
    return LLMError(detail)
