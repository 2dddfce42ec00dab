"""Records an ACP agent's wire: ``python wire_recorder.py OUT.jsonl COMMAND ARGS...`` runs the
agent with its stdin/stdout passed through, and writes every message in both directions to
``OUT.jsonl`` in wire order, as the fixtures are (``{"ts", "dir", "msg"}`` a line)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import IO


async def pump(source: asyncio.StreamReader, sink: IO[bytes], direction: str, out: IO[str]) -> None:
    while line := await source.readline():
        sink.write(line)
        sink.flush()
        try:
            message = json.loads(line)
        except ValueError:
            message = {"unparsed": line.decode("utf-8", errors="replace")}
        out.write(json.dumps({"ts": round(time.time(), 3), "dir": direction, "msg": message}) + "\n")
        out.flush()


async def main() -> int:
    path, command = sys.argv[1], sys.argv[2:]
    process = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=50 * 1024 * 1024)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    assert process.stdin is not None and process.stdout is not None

    class Forward:
        def write(self, data: bytes) -> None:
            process.stdin.write(data)  # type: ignore[union-attr]

        def flush(self) -> None:
            pass

    async def inbound(out: IO[str]) -> None:
        await pump(stdin, Forward(), "client->agent", out)  # type: ignore[arg-type]
        process.stdin.close()  # type: ignore[union-attr]  # the client is done: so is the agent

    with open(path, "a") as out:
        reading = asyncio.create_task(inbound(out))
        await pump(process.stdout, sys.stdout.buffer, "agent->client", out)
        reading.cancel()
    return await process.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
