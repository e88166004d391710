"""Admin calls on transactions: list, describe, the producers of partitions, and
finding and aborting hanging transactions as Kafka's ``kafka-transactions`` tool does.

A hanging transaction is one a partition holds open (its producer state has a
transaction start offset, so the LSO cannot pass it) that the transaction
coordinator will never close: no coordinator knows the producer id, the
coordinator no longer knows its transactional id, or the coordinator's
transaction does not include that partition. Following Kafka's
``FindHangingTransactionsCommand``, only transactions whose producer last
wrote longer ago than the maximum transaction timeout are considered: a younger
one may still be closed by its coordinator.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_producers, describe_transactions, list_transactions, write_txn_markers

from ..cluster import TRANSACTION
from ..errors import IllegalStateError, TransactionalIdNotFoundError
from ..types import TopicPartition
from .base import AdminBase, by_topic, check
from .results import (AbortTransactionSpec, OpenTransaction, ProducerState, TransactionDescription,
                      TransactionListing)

#: Kafka's transaction.max.timeout.ms default, and find-hanging's --max-transaction-timeout (15 minutes).
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000


class TransactionAdmin(AdminBase):
    async def list_transactions(self, *, states: list[str] | None = None, producer_ids: list[int] | None = None,
                                min_duration_ms: int = -1) -> list[TransactionListing]:
        """Transactional ids known to every coordinator, filtered by state, producer id, and (ListTransactions
        v1+) by having a transaction open at least ``min_duration_ms``."""
        def build(version: int) -> Any:
            if min_duration_ms >= 0 and version < 1:
                check(Errors.UNSUPPORTED_VERSION, "this broker cannot filter transactions by duration")
            return list_transactions.REQUEST(state_filters=list(states or []),
                                             producer_id_filters=list(producer_ids or []),
                                             duration_filter=min_duration_ms)

        found = []
        for node_id, answer in (await self._every_broker(ApiKey.LIST_TRANSACTIONS, build)).items():
            check(answer.error_code, f"ListTransactions on broker {node_id}")
            found += [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node_id)
                      for t in answer.transaction_states]
        return sorted(found, key=lambda t: t.transactional_id)

    async def describe_transactions(self, transactional_ids: list[str]) -> dict[str, TransactionDescription]:
        """State, producer, timeout and partitions of each transactional id (TransactionalIdNotFoundError
        for one its coordinator does not know)."""
        found = {}
        for txn_id in transactional_ids:
            found[txn_id] = await self._describe_transaction(txn_id)
        return found

    async def _describe_transaction(self, txn_id: str) -> TransactionDescription:
        answer = await self._to_coordinator(
            TRANSACTION, txn_id, ApiKey.DESCRIBE_TRANSACTIONS,
            lambda _v: describe_transactions.REQUEST(transactional_ids=[txn_id]),
            lambda r: r.transaction_states[0].error_code)
        state = answer.transaction_states[0]
        check(state.error_code, f"transactional id {txn_id}")
        return TransactionDescription(
            txn_id, state.transaction_state, state.producer_id, state.producer_epoch, state.transaction_timeout_ms,
            state.transaction_start_time_ms,
            [TopicPartition(t.topic, p) for t in state.topics for p in t.partitions],
            await self.cluster.coordinator(TRANSACTION, txn_id))

    async def describe_producers(self, partitions: list[TopicPartition]) -> dict[TopicPartition, list[ProducerState]]:
        """The active producers of each partition, asked of its leader."""
        def build(_v: int, tps: list[TopicPartition]) -> Any:
            return describe_producers.REQUEST(topics=[
                describe_producers.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic(tps).items()])
        answers = await self._per_leader(partitions, ApiKey.DESCRIBE_PRODUCERS, build, lambda answer: (
            (TopicPartition(t.name, p.partition_index), p.error_code, p) for t in answer.topics for p in t.partitions))
        found = {}
        for tp, p in answers.items():
            check(p.error_code, f"{tp.topic}-{tp.partition}: {p.error_message or ''}".rstrip(": "))
            found[tp] = [ProducerState(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                                       s.coordinator_epoch, s.current_txn_start_offset) for s in p.active_producers]
        return found

    async def find_hanging_transactions(
            self, *, topic: str | None = None, partition: int | None = None, broker_id: int | None = None,
            max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS) -> list[OpenTransaction]:
        """Open transactions on partitions that their coordinator will never complete.

        The search covers ``topic`` (one ``partition`` of it if given) or every
        partition with a replica on ``broker_id``; one of the two is required,
        as in ``kafka-transactions find-hanging``.
        """
        if topic is None and broker_id is None:
            raise ValueError("find_hanging_transactions needs a topic or a broker id to limit the search")
        if partition is not None and topic is None:
            raise ValueError("a partition needs its topic")
        if topic is not None and partition is not None:
            partitions = [TopicPartition(topic, partition)]
        else:
            topics = [topic] if topic is not None else await self.list_topics(include_internal=True)
            partitions = [TopicPartition(name, p.partition)
                          for name, description in (await self.describe_topics(topics)).items()
                          for p in description.partitions if broker_id is None or broker_id in p.replicas]
        if not partitions:
            return []
        now_ms = int(time.time() * 1000)
        candidates = [OpenTransaction(tp, producer)
                      for tp, producers in (await self.describe_producers(partitions)).items()
                      for producer in producers
                      if producer.in_transaction and now_ms - producer.last_timestamp > max_transaction_timeout_ms]
        if not candidates:
            return []
        producer_ids = sorted({c.producer.producer_id for c in candidates})
        txn_ids = {t.producer_id: t.transactional_id
                   for t in await self.list_transactions(producer_ids=producer_ids) if t.producer_id in producer_ids}
        descriptions = await asyncio.gather(*(self._description_or_none(t) for t in set(txn_ids.values())))
        described = {d.transactional_id: d for d in descriptions if d is not None}
        hanging = []
        for candidate in candidates:
            description = described.get(txn_ids.get(candidate.producer.producer_id, ""))
            # The coordinator still lists the partition of an Ongoing transaction, and of a PrepareCommit/
            # PrepareAbort one until its marker is written: it will close those itself.
            if description is None or candidate.topic_partition not in description.topic_partitions:
                hanging.append(candidate)
        return sorted(hanging, key=lambda h: (h.topic_partition, h.producer.producer_id))

    async def _description_or_none(self, txn_id: str) -> TransactionDescription | None:
        try:
            return (await self.describe_transactions([txn_id]))[txn_id]
        except TransactionalIdNotFoundError:
            return None

    async def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Write an ABORT marker for the producer's transaction on one partition (WriteTxnMarkers v1 to
        its leader), as ``kafka-transactions abort`` does for a hanging transaction."""
        tp = spec.topic_partition
        request = write_txn_markers.REQUEST(markers=[write_txn_markers.Marker(
            producer_id=spec.producer_id, producer_epoch=spec.producer_epoch, transaction_result=False,
            coordinator_epoch=spec.coordinator_epoch,
            topics=[write_txn_markers.MarkerTopic(name=tp.topic, partition_indexes=[tp.partition])])])

        answers = await self._per_leader([tp], ApiKey.WRITE_TXN_MARKERS, lambda _v, _tps: request, lambda answer: (
            (TopicPartition(t.name, p.partition_index), p.error_code, p)
            for marker in answer.markers for t in marker.topics for p in t.partitions))
        for answered, p in answers.items():
            check(p.error_code, f"abort of producer {spec.producer_id} on {answered.topic}-{answered.partition}")

    async def abort_spec_for(self, tp: TopicPartition, start_offset: int) -> AbortTransactionSpec:
        """The abort spec of the transaction open on ``tp`` from ``start_offset`` (from DescribeProducers,
        as ``kafka-transactions abort --start-offset`` builds it; an absent coordinator epoch counts as 0)."""
        producers = (await self.describe_producers([tp]))[tp]
        for producer in producers:
            if producer.current_transaction_start_offset == start_offset:
                return AbortTransactionSpec(tp, producer.producer_id, producer.producer_epoch,
                                            max(producer.coordinator_epoch, 0))
        raise IllegalStateError(
            f"no open transaction starts at offset {start_offset} on {tp.topic}-{tp.partition}")
