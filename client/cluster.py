"""What the client knows of a cluster: brokers, partition leaders, coordinators, connections.

One ``Cluster`` is shared by everything a Producer, Consumer or Admin does. It
keeps one connection per broker (requests on it are pipelined), a metadata
cache refreshed on demand and on the errors that call for it, and the
coordinator of each group or transactional id, forgotten on NOT_COORDINATOR. Every request
goes through its one call path (``calls.py``: ``call``, ``call_leaders``), which retries what
may be retried within the caller's deadline.
It also keeps the finalized features (KIP-584) of the highest features epoch any
broker's ApiVersions answered, as the Java client's ApiVersions does: the
transaction manager reads ``transaction.version`` there.
"""

from __future__ import annotations

import asyncio
import ssl
import functools
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import find_coordinator, metadata

from .calls import ANY_BROKER, RETRY_BACKOFF_MAX_MS, CallPath, Coordinator
from .connection import Connection
from .errors import KafkaConnectionError, KafkaTimeoutError, SslAuthenticationError, raise_for
from .security import PLAINTEXT, ClientSecurity, authenticate

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
    topic_id: bytes = bytes(16)  # Metadata v10+; all zeros when the broker did not say


def parse_bootstrap(servers: str | list[str]) -> list[tuple[str, int]]:
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    found = []
    for entry in entries:
        host, _, port = entry.strip().rpartition(":")
        found.append((host.strip("[]") or "127.0.0.1", int(port or 9092)))
    return found


# asyncio.timeout, never wait_for: on Python 3.11 wait_for loses a cancellation that races
# with the awaited result (gh-86296), which left a cancelled heartbeat task running for good.


class Cluster(CallPath):
    def __init__(self, bootstrap_servers: str | list[str], *, client_id: str = "weir-python",
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS, security: ClientSecurity = PLAINTEXT):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security  # TLS and SASL of every connection (client/security.py)
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.retry_backoff_max = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self.nodes: dict[int, Node] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._connections: dict[int, Connection] = {}
        self._connecting: dict[int, asyncio.Task[Connection]] = {}
        self._closing: set[asyncio.Task[None]] = set()
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
            task.add_done_callback(functools.partial(self._connected, node_id))
        return await asyncio.shield(task)

    def _connected(self, node_id: int, _task: asyncio.Task[Connection]) -> None:
        self._connecting.pop(node_id, None)

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
        except ssl.SSLError as exc:  # before OSError, its base: the broker was reached and refused
            raise SslAuthenticationError(f"TLS handshake with {host}:{port} failed: {exc}") from None
        except (TimeoutError, OSError, KafkaConnectionError) as exc:
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

    async def send(self, node_id: int, api_key: ApiKey, build: Callable[[int], Any], *, highest: int | None = None,
                   timeout: float | None = None, transaction_version: int = 1) -> Any:
        """One attempt: build a request for the negotiated version of ``api_key`` and send it to one broker.

        ``build(version)`` returns the request body; it sees the version so it can
        fill what that version carries. Callers go through ``call``, which retries.
        """
        try:
            connection = await self.connection(node_id)
            return await self._request(connection, api_key, build, highest, timeout, transaction_version,
                                       f"broker {node_id}")
        except KafkaConnectionError:
            self._forget_node(node_id)
            raise

    async def send_any(self, api_key: ApiKey, build: Callable[[int], Any], *, highest: int | None = None,
                       timeout: float | None = None) -> Any:
        """One attempt on whichever broker is reachable."""
        connection = await self.any_connection()
        return await self._request(connection, api_key, build, highest, timeout, 1, "any broker")

    async def _request(self, connection: Connection, api_key: ApiKey, build: Callable[[int], Any],
                       highest: int | None, timeout: float | None, transaction_version: int, where: str) -> Any:
        version = connection.version_for(api_key, highest, transaction_version=transaction_version)
        try:
            async with asyncio.timeout(timeout or self.request_timeout):
                return await connection.request(api_key, version, build(version))
        except TimeoutError:
            await connection.close()  # a late answer would be matched to the next request
            raise KafkaTimeoutError(f"{api_key.name} to {where} timed out") from None

    def requests_sent(self) -> Counter[tuple[int, int]]:
        """(api key, version) -> requests written on this cluster's open connections (what a test or an
        operator wants to know of the flow, e.g. that no AddPartitionsToTxn went at transaction version 2)."""
        total: Counter[tuple[int, int]] = Counter()
        for connection in {*self._connections.values(), self._bootstrap_connection}:
            if connection is not None:
                total.update(connection.sent)
        return total

    # ------------------------------------------------------------------ metadata

    async def refresh(self, topics: list[str] | None = None, *, allow_auto_create: bool = True,
                      deadline: float | None = None) -> None:
        """Fetch metadata for ``topics`` (all topics when None) and update the cache (retried within
        ``deadline``, request.timeout.ms from now by default)."""
        response = await self.call(ANY_BROKER, ApiKey.METADATA, self._metadata_request(topics, allow_auto_create),
                                   highest=12, error_of=lambda _r: 0, deadline=deadline)
        self._apply_metadata(response)

    async def refresh_once(self, topics: list[str] | None, *, allow_auto_create: bool = False) -> Any:
        """One Metadata attempt (the call path's refresh when a leader or the controller moved)."""
        response = await self.send_any(ApiKey.METADATA, self._metadata_request(topics, allow_auto_create),
                                       highest=12)
        self._apply_metadata(response)
        return response

    @staticmethod
    def _metadata_request(topics: list[str] | None, allow_auto_create: bool) -> Callable[[int], Any]:
        return lambda _v: metadata.REQUEST(
            topics=None if topics is None else [metadata.RequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=allow_auto_create)

    def _apply_metadata(self, response: Any) -> None:
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        self.nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in response.brokers}
        for node_id, connection in list(self._connections.items()):
            if node_id not in self.nodes:
                self._connections.pop(node_id)
                closing = asyncio.get_running_loop().create_task(connection.close())  # a broker that left
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        for topic in response.topics:
            info = TopicInfo(topic.name, {p.partition_index: p.leader_id for p in topic.partitions}, topic.error_code,
                             getattr(topic, "topic_id", None) or bytes(16))
            self.topics[topic.name] = info

    async def partitions_for(self, topic: str, *, deadline: float | None = None) -> int:
        """Partition count of ``topic``, asking Metadata until it is known or the deadline passes (an
        unknown topic, a leader not elected yet: retriable, as the Java producer's waitOnMetadata)."""
        info = self.topics.get(topic)
        if info is None or info.error or not info.partitions:
            def topic_error(response: Any) -> int:
                for answer in response.topics:
                    if answer.name == topic:
                        return int(answer.error_code) or (0 if answer.partitions else Errors.LEADER_NOT_AVAILABLE)
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            response = await self.call(ANY_BROKER, ApiKey.METADATA, self._metadata_request([topic], True),
                                       highest=12, error_of=topic_error, deadline=deadline)
            self._apply_metadata(response)
            raise_for(topic_error(response), f"topic {topic}", request=ApiKey.METADATA)
            info = self.topics[topic]
        return len(info.partitions)

    def leader(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        return -1 if info is None else info.partitions.get(partition, -1)

    # ------------------------------------------------------------------ coordinators

    async def coordinator(self, key_type: int, key: str, *, deadline: float | None = None) -> int:
        """Node id of the group (0) or transaction (1) coordinator for ``key`` (looked up until found)."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        response = await self.call(ANY_BROKER, ApiKey.FIND_COORDINATOR, self._find_coordinator_request(key_type, key),
                                   highest=3, deadline=deadline)
        return self._coordinator_found(key_type, key, response)

    async def find_coordinator_once(self, key_type: int, key: str) -> int:
        """The cached coordinator, or one FindCoordinator attempt (the call path's lookup)."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        response = await self.send_any(ApiKey.FIND_COORDINATOR, self._find_coordinator_request(key_type, key),
                                       highest=3)  # v4 batches keys; one is enough
        return self._coordinator_found(key_type, key, response)

    @staticmethod
    def _find_coordinator_request(key_type: int, key: str) -> Callable[[int], Any]:
        return lambda _v: find_coordinator.REQUEST(key=key, key_type=key_type)

    def _coordinator_found(self, key_type: int, key: str, response: Any) -> int:
        raise_for(response.error_code, f"{response.error_message or ''} ({Coordinator(key_type, key)})",
                  request=ApiKey.FIND_COORDINATOR)
        self.nodes.setdefault(response.node_id, Node(response.node_id, response.host, response.port))
        self._coordinators[(key_type, key)] = response.node_id
        return int(response.node_id)

    def forget_coordinator(self, key_type: int, key: str) -> None:
        self._coordinators.pop((key_type, key), None)

    def forget_leader(self, topic: str, partition: int) -> None:
        info = self.topics.get(topic)
        if info is not None and partition in info.partitions:
            info.partitions[partition] = -1  # the next call refreshes metadata first

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
