"""What every Admin operation stands on: the cluster, routing to the right broker, the call deadline.

Routing follows the Java AdminClient: topic changes go to the controller,
group calls to the group's coordinator, transaction descriptions to the
transaction coordinator, partition calls (DeleteRecords, DescribeProducers,
WriteTxnMarkers, ListOffsets) to each partition's leader, and listings
(ListGroups, ListTransactions) to every broker. Every request goes through the
cluster's call path, which retries a retriable answer (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, NOT_CONTROLLER, a lost connection, ...) until
``default_api_timeout_ms`` runs out, as ``default.api.timeout.ms`` bounds a
Java Admin call. What counts as the answer's code is each operation's
``error_of``: UNKNOWN_TOPIC_OR_PARTITION, retriable in Kafka's table, is to an
admin call the answer "this topic does not exist" (the Java Admin fails
describeTopics/deleteTopics/describeProducers with it at once), so it is left out.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Self, Unpack
from collections.abc import Callable, Iterable

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import metadata

from ..calls import ANY_BROKER, Broker, Coordinator, Target, default_error_of
from ..cluster import Cluster
from ..error_policy import is_retriable
from ..errors import error_instance, raise_for
from ..types import TopicPartition
from ..security import ClientSecurity, SecurityOptions

if TYPE_CHECKING:
    from .results import TopicDescription

#: Retriable in Kafka's table, but to an admin call "this topic does not exist" is the answer.
ANSWERS_NOT_RETRIED = frozenset({Errors.UNKNOWN_TOPIC_OR_PARTITION})


def retry_code(codes: Iterable[int]) -> int:
    """The first code the call path should retry for (retriable, and not an answer to an admin call)."""
    return next((c for c in codes if c and is_retriable(c) and c not in ANSWERS_NOT_RETRIED), 0)


def check(code: int, message: str | None = None) -> None:
    """Raise the code's exception class for an error answer."""
    raise_for(code, message)


class AdminBase:
    def __init__(self, bootstrap_servers: str | list[str], *, client_id: str = "weir-admin",
                 request_timeout_ms: int = 30000, default_api_timeout_ms: int = 60000,
                 retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000, **security: Unpack[SecurityOptions]):
        self.cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                               retry_backoff_ms=retry_backoff_ms, retry_backoff_max_ms=retry_backoff_max_ms,
                               security=ClientSecurity.from_options(**security))
        self.api_timeout = default_api_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000

    async def start(self) -> None:
        """Learn the brokers (Metadata for no topics)."""
        await self.cluster.refresh([], allow_auto_create=False, deadline=self._deadline())

    async def close(self) -> None:
        """Close every connection to the cluster."""
        await self.cluster.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    if TYPE_CHECKING:  # TopicAdmin's, which Admin combines with the other calls that use them
        async def list_topics(self, *, include_internal: bool = False) -> list[str]: ...
        async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription]: ...

    # ------------------------------------------------------------------ routing

    def _deadline(self) -> float:
        return time.monotonic() + self.api_timeout

    async def _call(self, target: Target, api_key: ApiKey, build: Callable[[int], Any], *,
                    error_of: Callable[[Any], int] = default_error_of, highest: int | None = None) -> Any:
        return await self.cluster.call(target, api_key, build, error_of=error_of, highest=highest,
                                       deadline=self._deadline())

    async def _metadata(self, topics: list[str] | None, error_of: Callable[[Any], int] = lambda _r: 0) -> Any:
        """A full Metadata answer (replicas, ISR, controller, internal flags); never creates topics."""
        request = metadata.REQUEST(topics=None if topics is None else [metadata.RequestTopic(name=t) for t in topics],
                                   allow_auto_topic_creation=False)
        return await self._call(ANY_BROKER, ApiKey.METADATA, lambda _v: request, error_of=error_of, highest=12)

    async def _to_coordinator(self, key_type: int, key: str, api_key: ApiKey, build: Callable[[int], Any],
                              error_code: Callable[[Any], int], *, highest: int | None = None) -> Any:
        """Send to the coordinator of ``key`` (found again when it moved, waited for while it loads);
        ``error_code(response)`` picks the code that says whether the coordinator answered."""
        return await self._call(Coordinator(key_type, key), api_key, build, error_of=error_code, highest=highest)

    async def _per_leader(self, partitions: Iterable[TopicPartition], api_key: ApiKey,
                          build: Callable[[int, list[TopicPartition]], Any],
                          answers: Callable[[Any], Iterable[tuple[TopicPartition, int, Any]]]
                          ) -> dict[TopicPartition, Any]:
        """One request per leader; the final answer of each partition. A topic or partition that does not
        exist fails at once (UnknownTopicOrPartitionError), as in the Java Admin."""
        partitions = list(partitions)
        deadline = self._deadline()
        await self.cluster.refresh(sorted({tp.topic for tp in partitions}), allow_auto_create=False, deadline=deadline)
        for tp in partitions:
            info = self.cluster.topics.get(tp.topic)
            if info is not None and info.error and not (is_retriable(info.error)
                                                         and info.error not in ANSWERS_NOT_RETRIED):
                check(info.error, f"topic {tp.topic}")
            if info is None or tp.partition not in info.partitions:
                raise error_instance(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition}")
        return await self.cluster.call_leaders(partitions, api_key, build, answers, deadline=deadline)

    async def _every_broker(self, api_key: ApiKey, build: Callable[[int], Any], *,
                            highest: int | None = None) -> dict[int, Any]:
        """The same request to every broker; {node id: response}."""
        await self.cluster.refresh([], allow_auto_create=False, deadline=self._deadline())
        nodes = sorted(self.cluster.nodes)
        answers = await asyncio.gather(*(self._call(Broker(n), api_key, build, highest=highest) for n in nodes))
        return dict(zip(nodes, answers, strict=True))


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return grouped
