"""What each listening socket speaks: Kafka's ``listeners``, ``advertised.listeners`` and
``listener.security.protocol.map``.

    listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9093,CLIENT://0.0.0.0:9094
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENT:SASL_SSL
    advertised.listeners=PLAINTEXT://127.0.0.1:9092,SSL://broker.example:9093,CLIENT://broker.example:9094

Without ``listeners`` the broker has one PLAINTEXT listener on ``--host``/``--port``
(``make run``: 127.0.0.1:9092). A listener's name picks its security protocol from the
map (the default map names each protocol after itself); each listener advertises its own
``advertised.listeners`` entry, and Metadata, FindCoordinator and DescribeCluster answer
a client with the address of the listener it connected to, as Kafka answers with the
endpoints registered for the request's listener name.

Deviations: a listener missing from ``advertised.listeners`` advertises its bind address
(Kafka leaves it out of the broker's registration, so its clients find no broker); an empty
host or 0.0.0.0 is advertised as the machine's host name, as Kafka does; ``CONTROLLER``
listeners have nothing to serve here and are refused.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from ..config import ConfigError


@dataclass(frozen=True)
class ListenerSpec:
    name: str  # upper case, as Kafka's ListenerName normalises it
    protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    host: str  # bind address; "" binds every interface
    port: int  # 0 = any free port
    advertised_host: str
    advertised_port: int  # 0 = the port bound

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _endpoints(setting: str, text: str) -> dict[str, tuple[str, int]]:
    endpoints: dict[str, tuple[str, int]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not name or not colon or not port.isdigit() or int(port) > 65535:
            raise ConfigError(f"{setting}: expected NAME://host:port, got {item!r}")
        name = name.upper()
        if name in endpoints:
            raise ConfigError(f"{setting}: each listener must have a different name, {name} is repeated")
        endpoints[name] = (host.strip("[]"), int(port))
    return endpoints


def _advertisable(host: str) -> str:
    return socket.getfqdn() if host in ("", "0.0.0.0", "::") else host


def listener_specs(config, default_host: str, default_port: int) -> list[ListenerSpec]:
    """The listeners to open, in the order given; ConfigError when the settings do not fit together."""
    if config["listeners"]:
        bound = _endpoints("listeners", config["listeners"])
    else:
        bound = {"PLAINTEXT": (default_host, default_port)}
    ports = [port for _host, port in bound.values() if port]
    if len(ports) != len(set(ports)):
        raise ConfigError("listeners: each listener must have a different port")
    advertised = _endpoints("advertised.listeners", config["advertised.listeners"])
    if not config["listeners"] and advertised and "PLAINTEXT" not in advertised:
        # The one default listener is PLAINTEXT; before named listeners, Weir took the first entry.
        advertised = {"PLAINTEXT": next(iter(advertised.values()))}
    unknown = set(advertised) - set(bound)
    if unknown:
        raise ConfigError(f"advertised.listeners: {', '.join(sorted(unknown))} not among the listeners "
                          f"({', '.join(bound)})")
    protocols = config["listener.security.protocol.map"]
    specs = []
    for name, (host, port) in bound.items():
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(f"No security protocol defined for listener {name} "
                              "(listener.security.protocol.map)")
        if name == "CONTROLLER":
            raise ConfigError("listeners: Weir has no KRaft controller; a CONTROLLER listener has nothing to serve")
        ad_host, ad_port = advertised.get(name, (host, port))
        if ad_host in ("0.0.0.0", "::") and name in advertised:
            raise ConfigError(f"advertised.listeners cannot use the nonroutable meta-address {ad_host}. "
                              "Use a routable IP address.")
        specs.append(ListenerSpec(name, protocol, host if host != "0.0.0.0" else "", port,
                                  _advertisable(ad_host), ad_port))
    return specs
