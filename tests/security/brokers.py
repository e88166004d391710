"""Brokers started from a server.properties alone (``weir --config``), with several listeners."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.broker_process import BrokerProcess
from weir.testing.settings import free_ports


def write_properties(path: Path, settings: dict[str, str]) -> Path:
    path.write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    return path


class ConfiguredBroker(BrokerProcess):
    """A Weir process given only ``--config`` and ``--data-dir``: ``listeners`` says where it listens.

    ``ports`` maps listener names to the ports chosen for them.
    """

    def __init__(self, run_dir: Path, settings: dict[str, str], ports: dict[str, int]):
        super().__init__(Path(run_dir) / "data", port=next(iter(ports.values())))
        self.ports = ports
        self.properties = write_properties(Path(run_dir) / "server.properties", settings)

    def bootstrap_for(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "weir.broker", "--config", str(self.properties),
                "--data-dir", str(self.data_dir), *self.args]


def listeners_setting(protocols: dict[str, str]) -> tuple[dict[str, str], dict[str, int]]:
    """``listeners`` and ``listener.security.protocol.map`` for {name: protocol} on free ports."""
    ports = dict(zip(protocols, free_ports(len(protocols)), strict=True))
    return ({"listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
             "listener.security.protocol.map": ",".join(f"{name}:{proto}" for name, proto in protocols.items())},
            ports)
