"""What a sink task leaves behind, made without Spark: a prepared transaction (written, flushed, open)
by the client's transactional Producer, and what readers see of a topic."""

from __future__ import annotations

from dataclasses import dataclass

from weir.client import Consumer, PreparedTxnState, Producer, TopicPartition


@dataclass(frozen=True)
class PreparedWrite:
    transactional_id: str
    prepared: PreparedTxnState
    partitions: list[TopicPartition]
    records: int

    @property
    def producer_id(self) -> int:
        return self.prepared.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.prepared.producer_epoch


async def write_prepared(bootstrap: str, txn_id: str, topic: str, values, **settings) -> PreparedWrite:
    """``values`` written in a transaction of ``txn_id`` that is prepared and left open, as a sink task does."""
    async with Producer(bootstrap, transactional_id=txn_id, **{"batch_size": 64, **settings}) as producer:
        producer.begin_transaction()
        deliveries = [await producer.send(topic, value) for value in values]
        prepared = await producer.prepare_transaction()
        for delivery in deliveries:
            delivery.result()
        partitions = sorted(producer.transaction_manager.partitions)
    return PreparedWrite(txn_id, prepared, partitions, len(deliveries))


async def visible(bootstrap, topic, partitions, isolation="read_committed"):
    """(sorted values of every record up to the end offsets, the end offsets: the LSO under read_committed)."""
    async with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        await consumer.seek_to_beginning(*tps)
        out = []
        while any([await consumer.position(tp) < ends[tp] for tp in tps]):
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                out += batch
        return sorted(r.value for r in out), ends
