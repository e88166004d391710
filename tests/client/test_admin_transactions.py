"""Admin against the real broker: transactions listed and described, producers of partitions,
and a real hanging transaction found by ``find_hanging_transactions`` and released by ``abort``.

How the hanging transaction is made. Weir verifies a transactional batch with
its coordinator before it opens a transaction on a partition (KIP-890), so the
usual cause in Kafka, a late Produce landing after its coordinator finished the
transaction, cannot happen here. What remains is the other cause: the
coordinator loses its state while a partition holds the transaction open, as
Kafka's does after an unclean leader election or a lost disk on
``__transaction_state``. The test opens a transaction with the raw protocol
(InitProducerId, AddPartitionsToTxn, a transactional Produce), kills the broker
with SIGKILL before any EndTxn, removes the ``__transaction_state`` partitions
and starts the broker again. The partition rebuilds the open transaction from
its log, the LSO stays at its first offset, and no coordinator will ever write
its marker: read_committed consumers are stuck behind it until an operator
aborts it.
"""

import asyncio
import shutil
import time

import pytest
from confluent_kafka import Consumer as CKConsumer, Producer as CKProducer, TopicPartition as CKTopicPartition

from weir.client import Admin, Connection
from weir.client.admin import LATEST, AbortTransactionSpec, NewTopic
from weir.client.errors import (IllegalStateError, InvalidProducerEpochError, TransactionalIdNotFoundError,
                           UnknownTopicOrPartitionError)
from weir.client.types import TopicPartition
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import add_partitions_to_txn, init_producer_id, produce
from weir.protocol.records import Record, encode_batch

TXN_ID = "stuck-writer"


async def open_transaction(port: int, topic: str, txn_id: str = TXN_ID) -> tuple[int, int]:
    """InitProducerId, AddPartitionsToTxn and one transactional batch on partition 0; no EndTxn."""
    conn = await Connection.open("127.0.0.1", port)
    try:
        for _ in range(2):  # twice, as a restarted producer does: epoch 1, so an older epoch exists
            started = await conn.request(ApiKey.INIT_PRODUCER_ID, 4, init_producer_id.REQUEST(
                transactional_id=txn_id, transaction_timeout_ms=600000))
        pid, epoch = started.producer_id, started.producer_epoch
        assert epoch == 1
        added = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_partitions_to_txn.REQUEST(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add_partitions_to_txn.Topic(name=topic, partitions=[0])]))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        batch = encode_batch([Record(b"never decided", timestamp=int(time.time() * 1000))], producer_id=pid,
                             producer_epoch=epoch, base_sequence=0, transactional=True)
        written = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
            transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
                name=topic, partition_data=[produce.PartitionData(index=0, records=batch)])]))
        assert written.responses[0].partition_responses[0].error_code == 0
        return pid, epoch
    finally:
        await conn.close()


def produce_plain(bootstrap: str, topic: str, value: bytes) -> None:
    producer = CKProducer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, partition=0)
    assert producer.flush(10) == 0


def read_committed(bootstrap: str, topic: str, want: int, timeout: float = 20) -> list[bytes]:
    """Values a read_committed confluent-kafka consumer sees on partition 0, waiting for ``want`` of them."""
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": "read_committed",
                           "enable.auto.commit": False})
    consumer.assign([CKTopicPartition(topic, 0, 0)])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < want and time.monotonic() < deadline:
            for message in consumer.consume(10, timeout=0.2):
                if not message.error():
                    seen.append(message.value())
    finally:
        consumer.close()
    return seen


def lose_transaction_coordinator_state(broker) -> None:
    """SIGKILL the broker and remove its ``__transaction_state`` partitions (see the module docstring)."""
    broker.kill()
    for directory in broker.data_dir.glob("__transaction_state-*"):
        shutil.rmtree(directory)
    broker.start()


async def test_list_and_describe_an_ongoing_transaction(broker, topic_name):
    async with Admin(broker.bootstrap) as admin:
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
        pid, epoch = await open_transaction(broker.port, topic_name)
        [listed] = await admin.list_transactions()
        assert (listed.transactional_id, listed.producer_id, listed.state, listed.coordinator_id) == (
            TXN_ID, pid, "Ongoing", 0)
        assert await admin.list_transactions(states=["Ongoing"], producer_ids=[pid], min_duration_ms=0) == [listed]
        assert await admin.list_transactions(states=["CompleteCommit"]) == []
        assert await admin.list_transactions(producer_ids=[pid + 1]) == []
        assert await admin.list_transactions(min_duration_ms=3_600_000) == []
        described = (await admin.describe_transactions([TXN_ID]))[TXN_ID]
        assert (described.state, described.producer_id, described.producer_epoch, described.transaction_timeout_ms,
                described.topic_partitions) == ("Ongoing", pid, epoch, 600000, [TopicPartition(topic_name, 0)])
        assert abs(described.transaction_start_time_ms - time.time() * 1000) < 60000
        with pytest.raises(TransactionalIdNotFoundError):
            await admin.describe_transactions(["nobody"])
        [producer] = (await admin.describe_producers([TopicPartition(topic_name, 0)]))[TopicPartition(topic_name, 0)]
        assert (producer.producer_id, producer.producer_epoch, producer.last_sequence,
                producer.current_transaction_start_offset) == (pid, epoch, 0, 0)
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.describe_producers([TopicPartition(topic_name, 5)])
        # Open, but its coordinator lists the partition: it will close it itself, so nothing hangs.
        assert await admin.find_hanging_transactions(topic=topic_name, max_transaction_timeout_ms=0) == []
        assert await admin.find_hanging_transactions(broker_id=0, max_transaction_timeout_ms=0) == []
        with pytest.raises(ValueError):
            await admin.find_hanging_transactions()


async def test_a_hanging_transaction_is_found_and_aborted(broker, topic_name):
    tp = TopicPartition(topic_name, 0)
    async with Admin(broker.bootstrap) as admin:
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
        pid, epoch = await open_transaction(broker.port, topic_name)
    await asyncio.to_thread(produce_plain, broker.bootstrap, topic_name, b"after the stuck one")
    await asyncio.to_thread(lose_transaction_coordinator_state, broker)

    async with Admin(broker.bootstrap) as admin:
        assert await admin.list_transactions() == []  # no coordinator knows the producer any more
        assert await admin.list_offsets({tp: LATEST}, read_committed=True) == {tp: 0}  # the LSO is stuck
        assert await asyncio.to_thread(read_committed, broker.bootstrap, topic_name, 1, 3) == []
        # Kafka's rule: only transactions older than the max transaction timeout (15 minutes) are candidates.
        assert await admin.find_hanging_transactions(topic=topic_name) == []
        [hanging] = await admin.find_hanging_transactions(topic=topic_name, max_transaction_timeout_ms=0)
        assert hanging.topic_partition == tp
        assert (hanging.producer.producer_id, hanging.producer.producer_epoch,
                hanging.producer.current_transaction_start_offset) == (pid, epoch, 0)
        assert await admin.find_hanging_transactions(broker_id=0, max_transaction_timeout_ms=0) == [hanging]
        assert await admin.find_hanging_transactions(topic=topic_name, partition=0,
                                                     max_transaction_timeout_ms=0) == [hanging]

        with pytest.raises(IllegalStateError, match="offset 1"):
            await admin.abort_spec_for(tp, 1)
        spec = await admin.abort_spec_for(tp, 0)
        assert spec == AbortTransactionSpec(tp, pid, epoch, 0)
        with pytest.raises(InvalidProducerEpochError):  # an older epoch than the partition's is fenced
            await admin.abort_transaction(AbortTransactionSpec(tp, pid, epoch - 1, 0))
        await admin.abort_transaction(spec)

        assert await admin.find_hanging_transactions(topic=topic_name, max_transaction_timeout_ms=0) == []
        assert await admin.list_offsets({tp: LATEST}, read_committed=True) == {tp: 3}  # record, record, marker
    assert await asyncio.to_thread(read_committed, broker.bootstrap, topic_name, 1) == [b"after the stuck one"]
