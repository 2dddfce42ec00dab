"""Which taskwire servers this client speaks to, and what it does with one it does not know.

The rule (README.md, "Versions"): a client speaks to servers of its own ``major.minor``
(``0.1.x`` for client ``0.1.x``). A newer server may add event kinds and fields: unknown kinds
arrive as ``UnknownEvent`` with every field kept, unknown fields are ignored, so nothing breaks
and ``check_server`` only warns. An older server, or something at the URL that is not a taskwire
server at all, is refused with ``IncompatibleServer`` saying what was found.
"""

from __future__ import annotations

from typing import Any

from taskwire_client.errors import IncompatibleServer

__version__ = "0.1.0"

SPEAKS_TO = tuple(int(part) for part in __version__.split(".")[:2])
"""The ``(major, minor)`` of the servers this client was built and tested against."""


def server_version(info: Any) -> tuple[int, int]:
    """The ``(major, minor)`` a ``/server_info`` answer names; ``IncompatibleServer`` when the
    answer is not a taskwire server's."""
    if not isinstance(info, dict) or info.get("name") != "taskwire" or not isinstance(info.get("version"), str):
        raise IncompatibleServer("the server is not a taskwire server (its /server_info names no taskwire version)")
    try:
        major, minor = (int(part) for part in info["version"].split(".")[:2])
    except ValueError:
        raise IncompatibleServer(f"the server names a taskwire version this client cannot read: {info['version']!r}") from None
    return major, minor


def compatibility(info: Any) -> str | None:
    """``None`` when this client speaks to the server ``info`` describes; a warning for a newer
    one (it works, with what it adds kept as ``UnknownEvent``); ``IncompatibleServer`` for an
    older one or a server that is not taskwire."""
    found = server_version(info)
    wanted = ".".join(map(str, SPEAKS_TO))
    if found[0] != SPEAKS_TO[0] or found < SPEAKS_TO:
        raise IncompatibleServer(
            f"the server is taskwire {info['version']}; taskwire-client {__version__} speaks to taskwire {wanted}.x "
            f"(install taskwire-client=={info['version']} to match it)"
        )
    if found > SPEAKS_TO:
        return (f"the server is taskwire {info['version']}, newer than {wanted}.x: what it adds is shown as "
                f"unknown events (upgrade taskwire-client to see it)")
    return None
