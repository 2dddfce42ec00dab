"""What users rely on in the model client's transport (``ModelHTTP``, over aiohttp): proxies
from the environment, TLS verified against the roots ``SSL_CERT_FILE`` names, and a stall
while the request is still being sent."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trustme
import uvicorn

from taskwire.errors import LLMError
from taskwire.llm.mock_server import create_mock_app
from taskwire.llm.retry import RetryPolicy
from taskwire.llm.transport import ModelHTTP
from tests.llm.conftest import http_client, serve_mock
from tests.llm.test_clients import ask, one_lane

NO_RETRY = RetryPolicy(max_retries=0)


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_proxy_from_the_environment_carries_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The "proxy" answers itself: the model's own address has nothing listening, so only a
    # request sent through the proxy is answered.
    async with serve_mock(one_lane({"text": "via the proxy"}), tmp_path / "log.jsonl") as proxy:
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        llm = http_client("openai", f"http://127.0.0.1:{unused_port()}", retry=NO_RETRY)
        answer = await llm.complete(ask("hi"))
        await llm.aclose()
        [request] = proxy.requests()
    assert answer.text == "via the proxy"
    assert request["path"] == "/v1/chat/completions"


@contextlib.asynccontextmanager
async def serve_tls(app: Any, cert: trustme.LeafCert, folder: Path) -> AsyncIterator[str]:
    key, chain = folder / "key.pem", folder / "chain.pem"
    cert.private_key_pem.write_to_path(str(key))
    cert.cert_chain_pems[0].write_to_path(str(chain))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ssl_keyfile=str(key), ssl_certfile=str(chain))
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"https://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
async def test_tls_is_verified_against_the_roots_the_environment_names(
    dialect: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = trustme.CA()
    app = create_mock_app(one_lane({"text": "over TLS"}))
    async with serve_tls(app, ca.issue_cert("127.0.0.1"), tmp_path) as url:
        # Roots without our CA: the certificate is refused, and that is final (not retried).
        strangers = http_client(dialect, url, retry=RetryPolicy(max_retries=3, base_delay=0.01))
        with pytest.raises(LLMError, match="Certificate"):
            await strangers.complete(ask("hi"))
        await strangers.aclose()
        ca_file = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
        trusting = http_client(dialect, url, retry=NO_RETRY)
        assert (await trusting.complete(ask("hi"))).text == "over TLS"
        await trusting.aclose()
    assert app.state.script.status()["served"] == [{"lane": "main", "turn": 0, "times": 1}]


async def test_a_server_that_never_reads_the_request_stalls_the_attempt(tmp_path: Path) -> None:
    # It accepts the connection and reads nothing: a large body cannot be sent, and no answer
    # comes. The attempt ends as a stall, not never.
    held: list[socket.socket] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)

    async def accept() -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            held.append(conn)

    acceptor = asyncio.ensure_future(accept())
    http = ModelHTTP()
    try:
        llm = http_client("openai", f"http://127.0.0.1:{listener.getsockname()[1]}", retry=NO_RETRY, http=http,
                          timeout=0.5, stall_timeout=0.5)
        huge = "x" * 8_000_000
        with pytest.raises(LLMError, match="stalled"):
            await llm.complete(ask(huge))
        await llm.aclose()
    finally:
        acceptor.cancel()
        await asyncio.gather(acceptor, return_exceptions=True)
        await http.aclose()
        for conn in held:
            conn.close()
        listener.close()
