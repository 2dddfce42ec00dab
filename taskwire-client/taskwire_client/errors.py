"""What the client raises.

``ClientError``
 ├── ``APIError``: the server answered a request with an error (``status``, ``code``, ``detail``)
 ├── ``StreamRefused``: the server closed the event socket for good (bad key, unknown id, bad query)
 ├── ``Unreachable``: no server answered, or it stayed away longer than the client waits
 ├── ``IncompatibleServer``: the server is not a taskwire server this client speaks to
 └── ``ProtocolError``: a frame that is not what the wire format promises
"""

from __future__ import annotations


class ClientError(Exception):
    """Base of every error the taskwire client raises."""


class APIError(ClientError):
    """A REST call answered with an error status; ``code`` is the server's stable code."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail


class StreamRefused(ClientError):
    """The server closed the event socket with a code that retrying cannot fix
    (4000 bad query, 4001 unauthorized, 4004 unknown conversation)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"the server refused the event stream ({code}): {reason or 'no reason given'}")
        self.code = code
        self.reason = reason


class Unreachable(ClientError):
    """No server answered at the URL (first connection), or it did not come back in time."""


class IncompatibleServer(ClientError):
    """The server at the URL is not taskwire, or a taskwire this client does not speak to
    (``taskwire_client.version`` holds the rule)."""


class ProtocolError(ClientError):
    """A frame of a known kind that does not validate: a server and client out of step."""
