"""``WeirContainer``: testcontainers' ``KafkaContainer``, with Weir in a child process instead of Docker.

A test written for ``testcontainers.kafka.KafkaContainer`` runs unchanged with

    from weir.testing import WeirContainer as KafkaContainer

The calls such tests make are here with KafkaContainer's signatures (testcontainers 4):
``start()``, ``stop()``, the context manager, ``get_bootstrap_server()``,
``get_container_host_ip()``, ``get_exposed_port()``, ``get_logs()``, ``with_kraft()``,
``with_cluster_id()``, ``with_env()``/``with_envs()``, ``with_name()``. What only means
something to Docker (the image, networks, the container's internal port) is accepted and
has no effect: there is no container.
"""

from __future__ import annotations

import warnings

from .process import ProcessBroker

#: Settings of the Confluent image's environment (``KAFKA_*``) that describe the container's
#: network or a ZooKeeper/KRaft layout. Weir has one listener and no quorum, so they do not
#: apply, and KafkaContainer sets several of them itself: ignored without a warning.
CONTAINER_LAYOUT_SETTINGS = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
    "broker.id", "zookeeper.connect", "process.roles", "controller.quorum.voters", "controller.listener.names",
    "node.id", "log.dirs", "jmx.port", "jmx.hostname", "opts", "heap.opts",
})

#: Replication settings a single-node Kafka needs lowered (users of KafkaContainer set them):
#: applied where Weir has the setting, otherwise ignored without a warning, since one node
#: holds one replica of everything anyway.
SINGLE_NODE_SETTINGS = frozenset({
    "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr", "default.replication.factor", "min.insync.replicas",
    "confluent.license.topic.replication.factor", "confluent.balancer.topic.replication.factor",
})


def env_to_setting(name: str) -> str | None:
    """The Kafka setting a Confluent image environment variable sets, as the image's
    ``configure`` script maps it (``KAFKA_`` dropped, ``___`` is ``-``, ``__`` is ``_``,
    ``_`` is ``.``, lower case); None for a variable that is not a ``KAFKA_`` setting."""
    if not name.startswith("KAFKA_"):
        return None
    rest = name[len("KAFKA_"):].lower()
    return rest.replace("___", "\0").replace("__", "\1").replace("_", ".").replace("\0", "-").replace("\1", "_")


class WeirContainer:
    """KafkaContainer's interface on a Weir broker process; see the module docstring."""

    def __init__(self, image: str = "weir", port: int = 9093, **kwargs):
        self.image = image  # kept for code that reads it; no image is pulled
        self.port = port  # the "container port" get_exposed_port() is asked about
        self.env: dict[str, str] = {}
        self.cluster_id: str | None = None
        self.kraft_enabled = False  # KafkaContainer's attribute; Weir runs no ZooKeeper either way
        self._name: str | None = None
        self._broker: ProcessBroker | None = None

    # -------------------------------------------------------------- configuring

    def with_kraft(self) -> WeirContainer:
        """Weir has no ZooKeeper to leave: only notes it, as KafkaContainer's ``kraft_enabled``."""
        self.kraft_enabled = True
        return self

    def with_cluster_id(self, cluster_id: str) -> WeirContainer:
        """The cluster id Metadata and DescribeCluster answer with (written to meta.properties)."""
        self.cluster_id = cluster_id
        return self

    def with_env(self, key: str, value: str) -> WeirContainer:
        """A ``KAFKA_*`` variable sets the Kafka setting the Confluent image would set from it."""
        self.env[key] = str(value)
        return self

    def with_envs(self, **variables: str) -> WeirContainer:
        for key, value in variables.items():
            self.with_env(key, value)
        return self

    def with_name(self, name: str) -> WeirContainer:
        self._name = name
        return self

    def with_exposed_ports(self, *ports: int) -> WeirContainer:
        """No container, so nothing to expose: the broker's one port answers for all."""
        return self

    def settings(self) -> dict[str, str]:
        """The broker settings the environment sets; settings Weir does not know are warned about and dropped."""
        from weir.broker.config import SETTINGS

        settings = {}
        for key, value in self.env.items():
            name = env_to_setting(key)
            if name is None or name in CONTAINER_LAYOUT_SETTINGS:
                continue
            if name in SETTINGS:
                settings[name] = value
            elif name not in SINGLE_NODE_SETTINGS:
                warnings.warn(f"WeirContainer: {key} sets {name!r}, a setting Weir does not have; ignored",
                              stacklevel=3)
        return settings

    # -------------------------------------------------------------- running

    def start(self, timeout: int = 30) -> WeirContainer:
        if self._broker is not None and self._broker.alive():
            return self
        broker = ProcessBroker(self.settings(), startup_timeout=timeout)
        if self.cluster_id is not None:
            (broker.data_dir / "meta.properties").write_text(f"version=1\ncluster.id={self.cluster_id}\n")
        self._broker = broker.start()
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Stop the broker; its data directory goes too unless ``delete_volume`` is false."""
        broker, self._broker = self._broker, None
        if broker is None:
            return
        if force:
            broker.kill()  # what docker rm -f does to a container
        if delete_volume:
            broker.close()
        else:
            broker.stop()

    def __enter__(self) -> WeirContainer:
        return self.start()

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.stop()

    # -------------------------------------------------------------- reading

    @property
    def broker(self) -> ProcessBroker:
        if self._broker is None:
            raise RuntimeError("the container is not started")
        return self._broker

    def get_bootstrap_server(self) -> str:
        return self.broker.bootstrap_servers

    def get_container_host_ip(self) -> str:
        return self.broker.host

    def get_exposed_port(self, port: int) -> int:
        return self.broker.port

    def get_logs(self) -> tuple[bytes, bytes]:
        """(stdout, stderr) as Docker keeps them: the broker logs to stderr only."""
        return b"", self.broker.log.encode()
