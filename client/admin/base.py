"""What every Admin operation stands on: the cluster, routing to the right broker, retries.

Routing follows the Java AdminClient: topic changes go to the controller,
group calls to the group's coordinator, transaction descriptions to the
transaction coordinator, partition calls (DeleteRecords, DescribeProducers,
WriteTxnMarkers, ListOffsets) to each partition's leader, and listings
(ListGroups, ListTransactions) to every broker. A retriable answer
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, NOT_CONTROLLER, a lost
connection, ...) is retried after ``retry_backoff_ms`` until
``default_api_timeout_ms`` runs out, as ``default.api.timeout.ms`` bounds a
Java Admin call.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Awaitable, Callable, Iterable, TypeVar, Unpack

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import metadata

from ..cluster import Cluster
from ..errors import BrokerResponseError, KafkaConnectionError, KafkaTimeoutError, error_for
from ..types import TopicPartition
from ..security import ClientSecurity, SecurityOptions

T = TypeVar("T")

#: Retriable in Kafka's table, but to an admin call "this topic does not exist" is the answer:
#: the Java Admin fails describeTopics/deleteTopics/describeProducers with it at once.
_ANSWERS_NOT_RETRIED = frozenset({Errors.UNKNOWN_TOPIC_OR_PARTITION})
#: Answers after which the cached coordinator is stale.
_COORDINATOR_MOVED = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})


class Retry(Exception):
    """Raised inside an attempt to have it retried (after the backoff) for a retriable answer."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def check(code: int, message: str | None = None) -> None:
    """Raise ``Retry`` for a retriable code, the code's exception class for any other error."""
    if not code:
        return
    error = error_for(code)(message)
    if error.retriable and code not in _ANSWERS_NOT_RETRIED:
        raise Retry(error)
    raise error


class AdminBase:
    def __init__(self, bootstrap_servers: str | list[str], *, client_id: str = "weir-admin",
                 request_timeout_ms: int = 30000, default_api_timeout_ms: int = 60000,
                 retry_backoff_ms: int = 100, **security: Unpack[SecurityOptions]):
        self.cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                               retry_backoff_ms=retry_backoff_ms, security=ClientSecurity.from_options(**security))
        self.api_timeout = default_api_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000

    async def start(self) -> None:
        """Learn the brokers (Metadata for no topics)."""
        await self._retrying(lambda: self.cluster.refresh([], allow_auto_create=False))

    async def close(self) -> None:
        await self.cluster.close()

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    # ------------------------------------------------------------------ retries

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` until it returns, fails for good, or the API timeout passes."""
        deadline = time.monotonic() + self.api_timeout
        while True:
            try:
                return await attempt()
            except Retry as retry:
                last: BaseException = retry.error
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last = exc
            except BrokerResponseError as exc:
                if not exc.retriable or exc.code in _ANSWERS_NOT_RETRIED:
                    raise
                last = exc
            if time.monotonic() + self.retry_backoff >= deadline:
                raise last
            await asyncio.sleep(self.retry_backoff)  # retry.backoff.ms

    # ------------------------------------------------------------------ routing

    async def _metadata(self, topics: list[str] | None) -> metadata.RESPONSE:
        """A full Metadata answer (replicas, ISR, controller, internal flags); never creates topics."""
        connection = await self.cluster.any_connection()
        version = connection.version_for(ApiKey.METADATA, 12)
        request = metadata.REQUEST(topics=None if topics is None else [metadata.RequestTopic(name=t) for t in topics],
                                   allow_auto_topic_creation=False)
        try:
            async with asyncio.timeout(self.cluster.request_timeout):  # not wait_for: see client/cluster.py
                return await connection.request(ApiKey.METADATA, version, request)
        except TimeoutError:
            await connection.close()
            raise KafkaTimeoutError("Metadata timed out") from None

    async def _controller(self) -> int:
        if self.cluster.controller_id < 0:
            await self.cluster.refresh([], allow_auto_create=False)
        if self.cluster.controller_id < 0:
            raise Retry(error_for(Errors.NOT_CONTROLLER)("no controller known"))
        return self.cluster.controller_id

    async def _to_controller(self, api_key: ApiKey, build, *, highest: int | None = None):
        return await self.cluster.send(await self._controller(), api_key, build, highest=highest)

    async def _to_coordinator(self, key_type: int, key: str, api_key: ApiKey, build, error_code, *,
                              highest: int | None = None):
        """Send to the coordinator of ``key``; retry via ``Retry`` when it moved or is loading.

        ``error_code(response)`` picks the code that says whether the coordinator
        answered; the response is returned for the caller to read (and ``check``)
        otherwise.
        """
        node_id = await self.cluster.coordinator(key_type, key)
        response = await self.cluster.send(node_id, api_key, build, highest=highest)  # forgets it on failure
        code = error_code(response)
        if code in _COORDINATOR_MOVED:
            self.cluster.forget_coordinator(key_type, key)
        if code in _COORDINATOR_MOVED or code == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            raise Retry(error_for(code)(f"coordinator {node_id} for {key!r}"))
        return response

    async def _leaders(self, partitions: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions grouped by their leader's node id, from fresh metadata."""
        partitions = list(partitions)
        topics = sorted({tp.topic for tp in partitions})
        await self.cluster.refresh(topics, allow_auto_create=False)
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            info = self.cluster.topics.get(tp.topic)
            if info is not None and info.error:
                check(info.error, f"topic {tp.topic}")
            if info is None or tp.partition not in info.partitions:
                raise error_for(Errors.UNKNOWN_TOPIC_OR_PARTITION)(f"{tp.topic}-{tp.partition}")
            leader = info.partitions[tp.partition]
            if leader < 0:
                raise Retry(error_for(Errors.LEADER_NOT_AVAILABLE)(f"{tp.topic}-{tp.partition}"))
            by_leader[leader].append(tp)
        return by_leader

    async def _every_broker(self, api_key: ApiKey, build, *, highest: int | None = None) -> dict[int, object]:
        """The same request to every broker; {node id: response}."""
        await self.cluster.refresh([], allow_auto_create=False)
        nodes = sorted(self.cluster.nodes)
        answers = await asyncio.gather(*(self.cluster.send(n, api_key, build, highest=highest) for n in nodes))
        return dict(zip(nodes, answers))


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return grouped
