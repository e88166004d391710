"""A Kafka Connect worker in distributed mode (``org.apache.kafka.connect.cli.ConnectDistributed``)
as a child process of the tests, on MirrorMaker 2's classpath (reference/mirror/pom.xml: Connect
4.3.1 with the file connectors), with its REST API on a port of its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.mirror.connect_process import ConnectProcess
from weir.testing.settings import free_port


def worker_properties(bootstrap: str, cluster: str, port: int) -> dict[str, str]:
    """One worker of the Connect cluster ``cluster``: its three internal topics on ``bootstrap``,
    exactly-once source support (KIP-618), and quick failure detection and rebalancing."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": cluster,
        "config.storage.topic": f"{cluster}-configs",
        "offset.storage.topic": f"{cluster}-offsets",
        "status.storage.topic": f"{cluster}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "3",
        "status.storage.partitions": "1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "exactly.once.source.support": "enabled",
        "listeners": f"http://127.0.0.1:{port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(port),
        "offset.flush.interval.ms": "1000",
        # a killed worker is noticed within 6 s and its tasks handed over at once, not after 5 minutes
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        "scheduled.rebalance.max.delay.ms": "0",
        "plugin.discovery": "service_load",
    }


class ConnectWorker(ConnectProcess):
    """``start()`` launches the worker; ``ready()`` says whether its REST API answers."""

    kind = "connect-worker"
    name = "worker"
    main_class = "org.apache.kafka.connect.cli.ConnectDistributed"

    def __init__(self, run_dir: Path, bootstrap: str, cluster: str):
        self.port = free_port()
        super().__init__(run_dir, worker_properties(bootstrap, cluster, self.port))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(HTTP status, decoded JSON or None); connection failures raise OSError."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None

    def ready(self) -> bool:
        try:
            return self.rest("GET", "/connectors")[0] == 200
        except OSError:
            return False
