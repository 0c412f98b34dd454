"""Stand-ins for object stores that cannot be reached, for the tests of the time limit:
a port nothing listens on, and a server that takes connections and never answers."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


def closed_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def silent_server() -> Iterator[int]:
    """A local port whose connections the kernel accepts and nothing ever answers: a
    store behind a proxy or firewall that swallows requests. Closing it at the end
    refuses the clients still waiting, so their threads end too."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()
