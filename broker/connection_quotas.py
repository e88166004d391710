"""How many connections the broker holds, in total and per client address.

Kafka's ``max.connections``, ``max.connections.per.ip`` and
``max.connections.per.ip.overrides`` (hosts in the overrides are resolved once,
at start-up, as Kafka's ``ConnectionQuotas`` resolves them when configured).
"""

from __future__ import annotations

import ipaddress
import socket
from collections import Counter

from .config import ConfigError


def _canonical(text: str) -> str:
    """One spelling per address: an IPv4-mapped IPv6 address (a dual-stack socket's IPv4 client) is IPv4."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def client_ip(peername) -> str:
    if not peername:
        return ""
    try:
        return _canonical(peername[0])
    except ValueError:
        return peername[0]


def _resolve(host: str) -> str:
    try:
        return _canonical(host)
    except ValueError:
        pass
    try:
        return client_ip(socket.getaddrinfo(host, None)[0][4])  # the first address, as InetAddress.getByName
    except OSError as exc:
        raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc}") from None


class ConnectionQuotas:
    def __init__(self, config):
        self.max_connections: int = config["max.connections"]
        self.max_per_ip: int = config["max.connections.per.ip"]
        self.per_ip_overrides: dict[str, int] = {
            _resolve(host): count for host, count in config["max.connections.per.ip.overrides"].items()}
        self._per_ip: Counter[str] = Counter()
        self.total = 0

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_per_ip)

    def refusal(self, ip: str) -> str | None:
        """Why a new connection from ``ip`` must be refused, or None when it may be counted in."""
        if self.total >= self.max_connections:
            return f"the broker already has the configured maximum of {self.max_connections} connections"
        limit = self.limit_for(ip)
        if self._per_ip[ip] >= limit:
            return f"address already has the configured maximum of {limit} connections"
        return None

    def add(self, ip: str) -> None:
        self._per_ip[ip] += 1
        self.total += 1

    def remove(self, ip: str) -> None:
        self.total -= 1
        self._per_ip[ip] -= 1
        if not self._per_ip[ip]:
            del self._per_ip[ip]
