"""Consume-transform-produce exactly once: one object that consumes with a group,
produces in transactions and commits the consumed offsets inside them.

    async with GroupTransactSession("orders", bootstrap_servers=servers, group_id="billing",
                                    transactional_id="billing-1") as session:
        while True:
            for tp, records in (await session.getmany(timeout_ms=500)).items():
                for record in records:
                    await session.send("invoices", transform(record.value), record.key)
            committed = await session.end()   # False: aborted, the records will come again

The shape of franz-go's ``GroupTransactSession``. A rebalance that revokes or loses
partitions while a transaction is open makes ``end()`` abort instead of commit
(another member may already be reading those partitions from the committed
offsets); so does a TxnOffsetCommit refused for a stale generation (KIP-447).
After an abort every owned partition is rewound to its committed offset, so the
aborted records are read again. The consumer reads read_committed and never
auto-commits; a restarted session's ``start()`` fences its predecessor (same
transactional id) and aborts what it left open. With ``consumer_options={"group_protocol":
"consumer"}`` (KIP-848) the generation the offsets carry is the member epoch.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .consumer import Consumer
from .consumer.group import RebalanceListener
from .errors import KafkaException
from .producer import Producer
from .producer.transaction_manager import TransactionManager, TxnState
from .types import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

log = logging.getLogger(__name__)


class GroupTransactSession:
    """Consume-transform-produce exactly once: a group consumer and a transactional producer in step.

    ``getmany()`` reads (read_committed) and opens a transaction; ``send()`` writes in it;
    ``end()`` commits the output together with the consumed offsets (KIP-447: the group's
    generation fences a zombie), or aborts when a rebalance moved partitions meanwhile and
    returns False, so the records are read again by their new owner."""
    def __init__(self, *topics: str, bootstrap_servers: str | list[str], group_id: str, transactional_id: str,
                 group_instance_id: str | None = None, transaction_timeout_ms: int = 60000,
                 rebalance_listener: RebalanceListener | None = None, consumer_options: dict[str, Any] | None = None,
                 producer_options: dict[str, Any] | None = None) -> None:
        self._listener = rebalance_listener
        options = dict(consumer_options or {})
        options.update(enable_auto_commit=False, isolation_level="read_committed")
        options.setdefault("auto_offset_reset", "earliest")
        self.consumer = Consumer(*topics, bootstrap_servers=bootstrap_servers, group_id=group_id,
                                 group_instance_id=group_instance_id, rebalance_listener=self._Watch(self),
                                 **options)
        self.producer = Producer(bootstrap_servers, transactional_id=transactional_id,
                                 transaction_timeout_ms=transaction_timeout_ms, **(producer_options or {}))
        txn = self.producer.transaction_manager
        assert txn is not None  # the producer has a transactional_id
        self._txn: TransactionManager = txn
        self._consumed: dict[TopicPartition, int] = {}  # next offset per partition, in the open transaction
        self._moved = False  # partitions were revoked or lost while the transaction was open

    class _Watch:
        """The session's rebalance listener: notes moved partitions, then calls the user's."""

        def __init__(self, session: GroupTransactSession) -> None:
            self.session = session

        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            self.session._partitions_moved(revoked, "revoked")
            if self.session._listener is not None:
                await self.session._listener.on_partitions_revoked(revoked)

        async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
            self.session._partitions_moved(lost, "lost")
            if self.session._listener is not None:
                await self.session._listener.on_partitions_lost(lost)

        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            if self.session._listener is not None:
                await self.session._listener.on_partitions_assigned(assigned)

    def _partitions_moved(self, partitions: set[TopicPartition], how: str) -> None:
        if partitions and self.in_transaction:
            log.info("partitions %s while a transaction is open: it will abort", how)
            self._moved = True

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Take the transactional id (fencing a predecessor), then join the group."""
        await self.producer.start()  # InitProducerId first: fences a predecessor before we read
        await self.consumer.start()

    async def close(self) -> None:
        """Abort an open transaction, leave the group, close both clients."""
        try:
            if self.in_transaction and self._txn.state is not TxnState.FATAL_ERROR:
                await self.end(commit=False)
        finally:
            await self.consumer.close()
            await self.producer.close()

    async def __aenter__(self) -> GroupTransactSession:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ the loop

    @property
    def in_transaction(self) -> bool:
        return self._txn.in_transaction

    def _begin_if_needed(self) -> None:
        if not self.in_transaction:
            self.producer.begin_transaction()
            self._moved = False

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int = 500) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records to transform; the first ones begin a transaction that ``end()`` finishes."""
        records = await self.consumer.getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records)
        if records:
            self._begin_if_needed()
            for tp, batch in records.items():
                self._consumed[tp] = batch[-1].offset + 1
        return records

    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                   partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
                   timestamp_ms: int | None = None) -> asyncio.Future[RecordMetadata]:
        """Produce in the open transaction (beginning one if needed); returns the delivery future."""
        self._begin_if_needed()
        return await self.producer.send(topic, value, key, partition=partition, headers=headers,
                                        timestamp_ms=timestamp_ms)

    async def end(self, commit: bool = True) -> bool:
        """End the open transaction: commit the output with the consumed offsets, or abort.

        Returns True if it committed. It aborts instead (and returns False) when asked to, when
        partitions moved during the transaction, or when the commit fails with an abortable error;
        after an abort, the owned partitions are read again from their committed offsets. A fatal
        error (fenced by a newer session with the same transactional id) is raised."""
        if not self.in_transaction:
            return False
        state = self._txn.state
        if state is TxnState.COMMITTING_TRANSACTION:  # an earlier end() timed out while committing: finish it
            await self.producer.commit_transaction()
            self._consumed.clear()
            return True
        if commit and not self._moved and state is TxnState.IN_TRANSACTION:
            offsets = {tp: OffsetAndMetadata(offset) for tp, offset in self._consumed.items()
                       if tp in self.consumer.assignment()}
            try:
                if offsets:
                    await self.producer.send_offsets_to_transaction(offsets, self.consumer.group_metadata())
                if not self._moved:
                    await self.producer.commit_transaction()
                    self._consumed.clear()
                    return True
            except KafkaException as exc:
                if getattr(exc, "fatal", False) or not getattr(exc, "abortable", False):
                    raise
                log.info("transaction aborts after %s", exc)
        await self._abort()
        return False

    async def _abort(self) -> None:
        await self.producer.abort_transaction()
        self._consumed.clear()
        self._moved = False
        owned = sorted(self.consumer.assignment())
        if not owned:
            return
        group = self.consumer.group
        assert group is not None  # the session's consumer has a group_id
        committed = await group.fetch_committed(owned)
        for tp in owned:
            if tp not in self.consumer.fetcher.states:
                continue
            if tp in committed:
                self.consumer.seek(tp, committed[tp].offset)
            else:  # nothing committed yet: auto_offset_reset decides again on the next getmany
                self.consumer.fetcher.forget_position(tp)
