"""Raw requests to either broker through Weir's own codec, retried the way a client does.

One single-node broker is every coordinator and every partition leader, so no request
is routed; but a coordinator must still be looked up first (Kafka creates its internal
topics on that first FindCoordinator) and answers COORDINATOR_LOAD_IN_PROGRESS or
CONCURRENT_TRANSACTIONS for a while, which clients retry until a deadline.
"""

from __future__ import annotations

import asyncio
import time

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (add_offsets_to_txn, add_partitions_to_txn, create_topics, end_txn, fetch,
                               find_coordinator, init_producer_id, list_offsets, offset_commit, offset_fetch,
                               produce, txn_offset_commit, write_txn_markers)
from weir.protocol.records import Record, encode_batch

#: Errors a Java client retries on coordinator requests (backoff, then the same request).
COORDINATOR_RETRIABLE = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                                   Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS})
#: Errors a leader answers, without having written anything, while it is not able to take a write
#: or serve a read for a moment: a single Kafka node whose controller session lapsed on a busy
#: machine is fenced and answers these until it registers again (its ISR shrank below
#: min.insync.replicas: NOT_ENOUGH_REPLICAS, not NOT_ENOUGH_REPLICAS_AFTER_APPEND). Clients retry
#: them; a scenario judges the answer after them, never one of them.
LEADER_TRANSIENT = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                              Errors.NOT_ENOUGH_REPLICAS})
#: Errors a new partition answers until its leader is in place.
PARTITION_NOT_READY = LEADER_TRANSIENT | {Errors.UNKNOWN_TOPIC_OR_PARTITION}
RETRY_BACKOFF = 0.05  # seconds, as a client's retry.backoff.ms
COORDINATOR = {"group": 0, "transaction": 1}

# Versions both brokers serve; the same request goes to each.
V_PRODUCE, V_FETCH, V_LIST_OFFSETS, V_OFFSET_FETCH = 9, 12, 7, 8
V_FIND_COORDINATOR, V_CREATE_TOPICS, V_INIT_PRODUCER_ID, V_ADD_PARTITIONS = 4, 4, 4, 3
V_ADD_OFFSETS, V_END_TXN, V_WRITE_TXN_MARKERS, V_TXN_OFFSET_COMMIT, V_OFFSET_COMMIT = 3, 3, 1, 3, 8


class Wire:
    def __init__(self, broker, connection: Connection, deadline: float = 30.0, client_transaction_version: int = 1):
        self.broker = broker
        self.connection = connection
        self.deadline = deadline
        #: The transaction version the scenario's producers speak (tests/reference/producer.py).
        self.client_transaction_version = client_transaction_version

    @classmethod
    async def open(cls, broker, client_transaction_version: int = 1) -> Wire:
        return cls(broker, await _connect(broker), client_transaction_version=client_transaction_version)

    def named(self, name: str) -> str:
        """A topic, transactional id or group of its own per client version: one broker serves both."""
        return name if self.client_transaction_version == 1 else f"{name}-tv{self.client_transaction_version}"

    async def close(self) -> None:
        await self.connection.close()

    async def kill_and_restart(self) -> None:
        """kill -9 the broker, start it again on its data, and reconnect."""
        await self.connection.close()
        self.broker.kill()
        await asyncio.to_thread(self.broker.start)
        self.connection = await _connect(self.broker)

    async def wait_for_partitions(self, topic: str, partitions: int = 1) -> None:
        """Poll until every partition's leader answers ListOffsets (after creation or a restart)."""
        await self.call(ApiKey.LIST_OFFSETS, V_LIST_OFFSETS, _list_offsets_request(topic, partitions, 0, -1),
                        error=lambda answer: max(p.error_code for p in answer.topics[0].partitions),
                        retry=PARTITION_NOT_READY)

    async def call(self, api_key, version, body, *, error=lambda answer: answer.error_code,
                   retry=COORDINATOR_RETRIABLE):
        """The first answer whose ``error(answer)`` is not in ``retry``; TimeoutError past the deadline."""
        give_up = time.monotonic() + self.deadline
        while True:
            answer = await self.connection.request(api_key, version, body)
            if error(answer) not in retry:
                return answer
            if time.monotonic() > give_up:
                raise TimeoutError(f"{ApiKey(api_key).name} still answers {Errors(error(answer)).name}")
            await asyncio.sleep(RETRY_BACKOFF)

    async def wait_for_lso(self, topic: str, offset: int, isolation: int = 1) -> None:
        """Poll until the last stable offset (or with isolation 0 the high watermark) reaches
        ``offset``: Kafka writes markers after EndTxn has answered."""
        give_up = time.monotonic() + self.deadline
        while (await self.list_offsets(topic, isolation)).topics[0].partitions[0].offset < offset:
            if time.monotonic() > give_up:
                raise TimeoutError(f"{topic}: offset (isolation {isolation}) still below {offset}")
            await asyncio.sleep(RETRY_BACKOFF)

    async def wait_until_stable(self, group: str, topic: str) -> None:
        """Poll until no transactional offset of ``group`` is pending (its marker has landed)."""
        await self.call(ApiKey.OFFSET_FETCH, V_OFFSET_FETCH, _offset_fetch_request(group, topic, True),
                        error=lambda answer: answer.groups[0].topics[0].partitions[0].error_code,
                        retry={Errors.UNSTABLE_OFFSET_COMMIT})

    async def find_coordinator(self, key: str, key_type: str):
        return await self.call(ApiKey.FIND_COORDINATOR, V_FIND_COORDINATOR, find_coordinator.REQUEST(
            key_type=COORDINATOR[key_type], coordinator_keys=[key]),
            error=lambda answer: answer.coordinators[0].error_code)

    async def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None):
        answer = await self.connection.request(ApiKey.CREATE_TOPICS, V_CREATE_TOPICS, create_topics.REQUEST(
            timeout_ms=10000, topics=[create_topics.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                configs=[create_topics.CreatableTopicConfig(name=key, value=value)
                         for key, value in (config or {}).items()])]))
        await self.wait_for_partitions(name, partitions)
        return answer

    async def init_producer_id(self, txn_id: str | None, version=V_INIT_PRODUCER_ID, transaction_timeout_ms=60000,
                               **extra):
        return await self.call(ApiKey.INIT_PRODUCER_ID, version, init_producer_id.REQUEST(
            transactional_id=txn_id, transaction_timeout_ms=transaction_timeout_ms, **extra))

    async def add_partitions(self, txn_id, pid, epoch, topic, partitions=(0,), version=V_ADD_PARTITIONS):
        return await self.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions_to_txn.REQUEST(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add_partitions_to_txn.Topic(name=topic, partitions=list(partitions))]),
            error=lambda answer: answer.results_by_topic_v3_and_below[0].results_by_partition[0]
            .partition_error_code)

    async def add_offsets(self, txn_id, pid, epoch, group):
        return await self.call(ApiKey.ADD_OFFSETS_TO_TXN, V_ADD_OFFSETS, add_offsets_to_txn.REQUEST(
            transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id=group))

    async def txn_offset_commit(self, txn_id, group, pid, epoch, topic, offset, metadata="m",
                                version=V_TXN_OFFSET_COMMIT):
        return await self.call(ApiKey.TXN_OFFSET_COMMIT, version, txn_offset_commit.REQUEST(
            transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
                txn_offset_commit.RequestTopic(name=topic, partitions=[txn_offset_commit.RequestPartition(
                    partition_index=0, committed_offset=offset, committed_metadata=metadata)])]),
            error=lambda answer: answer.topics[0].partitions[0].error_code)

    async def offset_commit(self, group, topic, offset, metadata="plain"):
        """A simple-group commit (no generation, no member), as a standalone consumer sends."""
        return await self.call(ApiKey.OFFSET_COMMIT, V_OFFSET_COMMIT, offset_commit.REQUEST(
            group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[offset_commit.RequestTopic(
                name=topic, partitions=[offset_commit.RequestPartition(
                    partition_index=0, committed_offset=offset, committed_metadata=metadata)])]),
            error=lambda answer: answer.topics[0].partitions[0].error_code)

    async def end_txn(self, txn_id, pid, epoch, commit: bool, version=V_END_TXN):
        return await self.call(ApiKey.END_TXN, version, end_txn.REQUEST(
            transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))

    async def produce(self, topic, values, *, pid=-1, epoch=-1, seq=-1, txn_id=None, partition=0,
                      version=V_PRODUCE, retry=frozenset()):
        """One batch; retried on a leader's transient answers and on those in ``retry`` (a scenario's
        own, explicit choice), each of which says nothing was written."""
        batch = encode_batch([Record(value) for value in values], producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq, transactional=txn_id is not None)
        return await self.call(ApiKey.PRODUCE, version, produce.REQUEST(
            transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
                name=topic, partition_data=[produce.PartitionData(index=partition, records=batch)])]),
            error=lambda answer: answer.responses[0].partition_responses[0].error_code,
            retry=LEADER_TRANSIENT | retry)

    async def list_offsets(self, topic, isolation: int, timestamp: int = -1, partitions: int = 1):
        return await self.call(ApiKey.LIST_OFFSETS, V_LIST_OFFSETS,
                               _list_offsets_request(topic, partitions, isolation, timestamp),
                               error=lambda answer: _transient([p.error_code for p in answer.topics[0].partitions]),
                               retry=LEADER_TRANSIENT)

    async def fetch(self, topic, isolation: int, offset: int = 0):
        return await self.call(ApiKey.FETCH, V_FETCH, fetch.REQUEST(
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=isolation,
            session_id=0, session_epoch=-1, topics=[fetch.FetchTopic(topic=topic, partitions=[
                fetch.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[], rack_id=""),
            error=lambda answer: answer.responses[0].partitions[0].error_code, retry=LEADER_TRANSIENT)

    async def offset_fetch(self, group, topic, require_stable: bool):
        return await self.connection.request(ApiKey.OFFSET_FETCH, V_OFFSET_FETCH,
                                             _offset_fetch_request(group, topic, require_stable))

    async def write_txn_markers(self, pid, epoch, commit: bool, topic, partitions=(0,), coordinator_epoch=0):
        return await self.connection.request(ApiKey.WRITE_TXN_MARKERS, V_WRITE_TXN_MARKERS,
                                             write_txn_markers.REQUEST(markers=[write_txn_markers.Marker(
                                                 producer_id=pid, producer_epoch=epoch,
                                                 transaction_result=commit, coordinator_epoch=coordinator_epoch,
                                                 topics=[write_txn_markers.MarkerTopic(
                                                     name=topic, partition_indexes=list(partitions))])]))


def _transient(error_codes: list[int]) -> int:
    """The first of ``error_codes`` a leader answers for a moment, else NONE: the other errors of a
    per-partition answer are the scenario's to judge."""
    return next((code for code in error_codes if code in LEADER_TRANSIENT), Errors.NONE)


async def _connect(broker) -> Connection:
    return await Connection.open("127.0.0.1", broker.port, client_id="weir-differential")


def _list_offsets_request(topic, partitions, isolation, timestamp):
    return list_offsets.REQUEST(replica_id=-1, isolation_level=isolation, topics=[list_offsets.RequestTopic(
        name=topic, partitions=[list_offsets.RequestPartition(partition_index=index, timestamp=timestamp)
                                for index in range(partitions)])])


def _offset_fetch_request(group, topic, require_stable):
    return offset_fetch.REQUEST(groups=[offset_fetch.RequestGroup(group_id=group, topics=[
        offset_fetch.RequestGroupTopic(name=topic, partition_indexes=[0])])], require_stable=require_stable)
