"""Broker settings as the embeddable brokers take them: Kafka's dotted names, any simple values."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping


def as_properties(settings: Mapping[str, object] | None) -> dict[str, str]:
    """Settings as server.properties would spell them: ``True`` is ``true``, numbers their digits.

    ``None`` drops a setting (the broker's default applies), so callers can merge dictionaries.
    """
    properties = {}
    for name, value in (settings or {}).items():
        if value is None:
            continue
        properties[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return properties


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out as free; the caller binds it again, so it can be taken
    meanwhile: starting a broker on it picks another port when it is (see ``ADDRESS_IN_USE``)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free ports: each is held bound until all are chosen, so two calls of
    ``free_port`` cannot hand the same port to two listeners of one broker."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket())
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


#: Attempts at a port chosen by ``free_port`` before giving up: each loses only to a
#: process that bound the same port in the microseconds between our two binds.
PORT_ATTEMPTS = 5
