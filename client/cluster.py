"""What the client knows of a cluster: brokers, partition leaders, coordinators, connections.

One ``Cluster`` is shared by everything a Producer, Consumer or Admin does. It
keeps one connection per broker (requests on it are pipelined), a metadata
cache refreshed on demand and on the errors that call for it, and the
coordinator of each group or transactional id, forgotten on NOT_COORDINATOR.
It also keeps the finalized features (KIP-584) of the highest features epoch any
broker's ApiVersions answered, as the Java client's ApiVersions does: the
transaction manager reads ``transaction.version`` there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import find_coordinator, metadata

from .connection import Connection
from .security import PLAINTEXT, ClientSecurity, authenticate
from .errors import KafkaConnectionError, KafkaTimeoutError, error_for, raise_for

log = logging.getLogger(__name__)

GROUP, TRANSACTION = 0, 1  # FindCoordinator key types


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int


@dataclass(slots=True)
class TopicInfo:
    name: str
    partitions: dict[int, int] = field(default_factory=dict)  # partition -> leader node id (-1 none)
    error: int = 0


def parse_bootstrap(servers: str | list[str]) -> list[tuple[str, int]]:
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    found = []
    for entry in entries:
        host, _, port = entry.strip().rpartition(":")
        found.append((host.strip("[]") or "127.0.0.1", int(port or 9092)))
    return found


# asyncio.timeout, never wait_for: on Python 3.11 wait_for loses a cancellation that races
# with the awaited result (gh-86296), which left a cancelled heartbeat task running for good.


class Cluster:
    def __init__(self, bootstrap_servers: str | list[str], *, client_id: str = "weir-python",
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100,
                 security: ClientSecurity = PLAINTEXT):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security  # TLS and SASL of every connection (client/security.py)
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.nodes: dict[int, Node] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._connections: dict[int, Connection] = {}
        self._connecting: dict[int, asyncio.Task] = {}
        self._coordinators: dict[tuple[int, str], int] = {}
        self._bootstrap_connection: Connection | None = None
        self.finalized_features: dict[str, int] = {}
        self.finalized_features_epoch = -1

    # ------------------------------------------------------------------ connections

    def open_connection(self, node_id: int) -> Connection | None:
        """The broker's connection if it is open now (no await), else None."""
        existing = self._connections.get(node_id)
        return existing if existing is not None and not existing.closed else None

    async def connection(self, node_id: int) -> Connection:
        """The open connection to a broker, opened (and versions negotiated) on first use."""
        existing = self._connections.get(node_id)
        if existing is not None and not existing.closed:
            return existing
        task = self._connecting.get(node_id)
        if task is None:
            task = self._connecting[node_id] = asyncio.get_running_loop().create_task(self._open(node_id))
            task.add_done_callback(lambda _t, n=node_id: self._connecting.pop(n, None))
        return await asyncio.shield(task)

    async def _open(self, node_id: int) -> Connection:
        node = self.nodes.get(node_id)
        if node is None:
            raise KafkaConnectionError(f"unknown broker {node_id}")
        connection = await self._dial(node.host, node.port)
        self._connections[node_id] = connection
        return connection

    async def _dial(self, host: str, port: int) -> Connection:
        connection = None
        try:
            async with asyncio.timeout(self.request_timeout):
                connection = await Connection.open(host, port, self.client_id, self.security.tls)
                await connection.negotiate()
                if self.security.uses_sasl:
                    await authenticate(connection, self.security)
        except (OSError, asyncio.TimeoutError, KafkaConnectionError) as exc:
            if connection is not None:
                await connection.close()  # a socket that never finished its handshake is not kept
            raise KafkaConnectionError(f"cannot reach {host}:{port}: {exc!r}") from None
        except BaseException:  # refused by SASL (its typed error goes to the caller), or cancelled
            if connection is not None:
                await connection.close()
            raise
        if connection.finalized_features_epoch > self.finalized_features_epoch:
            self.finalized_features_epoch = connection.finalized_features_epoch
            self.finalized_features = connection.finalized_features
        return connection

    async def any_connection(self) -> Connection:
        """A connection to some broker: a known one if any is open, else a bootstrap address."""
        for connection in self._connections.values():
            if not connection.closed:
                return connection
        for node_id in list(self.nodes):
            try:
                return await self.connection(node_id)
            except KafkaConnectionError:
                continue
        if self._bootstrap_connection is not None and not self._bootstrap_connection.closed:
            return self._bootstrap_connection
        errors = []
        for host, port in self.bootstrap:
            try:
                self._bootstrap_connection = await self._dial(host, port)
                return self._bootstrap_connection
            except KafkaConnectionError as exc:
                errors.append(str(exc))
        raise KafkaConnectionError("no bootstrap server reachable: " + "; ".join(errors))

    async def send(self, node_id: int, api_key: ApiKey, build, *, highest: int | None = None,
                   timeout: float | None = None, transaction_version: int = 1):
        """Build a request for the negotiated version of ``api_key`` and send it to one broker.

        ``build(version)`` returns the request body; it sees the version so it can
        fill what that version carries.
        """
        try:
            connection = await self.connection(node_id)
            version = connection.version_for(api_key, highest, transaction_version=transaction_version)
            try:
                async with asyncio.timeout(timeout or self.request_timeout):
                    return await connection.request(api_key, version, build(version))
            except TimeoutError:
                await connection.close()  # a late answer would be matched to the next request
                raise KafkaTimeoutError(f"{api_key.name} to broker {node_id} timed out") from None
        except KafkaConnectionError:
            self._forget_node(node_id)
            raise

    def requests_sent(self) -> Counter:
        """(api key, version) -> requests written on this cluster's open connections (what a test or an
        operator wants to know of the flow, e.g. that no AddPartitionsToTxn went at transaction version 2)."""
        total: Counter = Counter()
        for connection in {*self._connections.values(), self._bootstrap_connection} - {None}:
            total.update(connection.sent)
        return total

    # ------------------------------------------------------------------ metadata

    async def refresh(self, topics: list[str] | None = None, *, allow_auto_create: bool = True) -> None:
        """Fetch metadata for ``topics`` (all topics when None) and update the cache."""
        connection = await self.any_connection()
        version = connection.version_for(ApiKey.METADATA, 12)
        request = metadata.REQUEST(
            topics=None if topics is None else [metadata.RequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=allow_auto_create)
        try:
            async with asyncio.timeout(self.request_timeout):
                response = await connection.request(ApiKey.METADATA, version, request)
        except asyncio.TimeoutError:
            await connection.close()
            raise KafkaTimeoutError("Metadata timed out") from None
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        self.nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in response.brokers}
        for node_id, connection in list(self._connections.items()):
            node = self.nodes.get(node_id)
            if node is None:
                self._connections.pop(node_id)
                await connection.close()
        for topic in response.topics:
            info = TopicInfo(topic.name, {p.partition_index: p.leader_id for p in topic.partitions}, topic.error_code)
            self.topics[topic.name] = info

    async def partitions_for(self, topic: str, *, deadline: float | None = None) -> int:
        """Partition count of ``topic``, refreshing metadata until it is known or the deadline passes."""
        deadline = deadline or time.monotonic() + self.request_timeout
        while True:
            info = self.topics.get(topic)
            if info is not None and info.error == 0 and info.partitions:
                return len(info.partitions)
            if info is not None and info.error and not error_for(info.error).retriable:
                raise_for(info.error, f"topic {topic}")
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"no metadata for topic {topic}")
            try:
                await self.refresh([topic])
            except KafkaConnectionError:
                pass
            info = self.topics.get(topic)
            if info is None or info.error or not info.partitions:
                await asyncio.sleep(self.retry_backoff)  # retry.backoff.ms between metadata attempts

    def leader(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        return -1 if info is None else info.partitions.get(partition, -1)

    # ------------------------------------------------------------------ coordinators

    async def coordinator(self, key_type: int, key: str) -> int:
        """Node id of the group (0) or transaction (1) coordinator for ``key``."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        connection = await self.any_connection()
        version = connection.version_for(ApiKey.FIND_COORDINATOR, 3)  # v4 batches keys; one is enough
        try:
            async with asyncio.timeout(self.request_timeout):
                response = await connection.request(
                    ApiKey.FIND_COORDINATOR, version, find_coordinator.REQUEST(key=key, key_type=key_type))
        except TimeoutError:
            await connection.close()  # a late answer would be matched to the next request
            raise KafkaTimeoutError(f"FindCoordinator for {key!r} timed out") from None
        raise_for(response.error_code, response.error_message)
        self.nodes.setdefault(response.node_id, Node(response.node_id, response.host, response.port))
        self._coordinators[(key_type, key)] = response.node_id
        return response.node_id

    def forget_coordinator(self, key_type: int, key: str) -> None:
        self._coordinators.pop((key_type, key), None)

    def _forget_node(self, node_id: int) -> None:
        """A broker's connection failed: the coordinators it held are looked up again."""
        for cached, node in list(self._coordinators.items()):
            if node == node_id:
                del self._coordinators[cached]

    async def close(self) -> None:
        for task in list(self._connecting.values()):
            task.cancel()
        connections = list(self._connections.values())
        if self._bootstrap_connection is not None:
            connections.append(self._bootstrap_connection)
        self._connections.clear()
        for connection in connections:
            await connection.close()
