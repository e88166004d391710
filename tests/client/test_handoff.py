"""A transaction prepared by one producer and ended by another process (KIP-939's shape), and rows sent
from Arrow columns, on Weir and on Apache Kafka."""

import asyncio

import pyarrow as pa
import pytest

from weir.client import (Consumer, PreparedTxnState, Producer, TopicPartition, complete_prepared_transaction,
                         fence_transactional_id)
from weir.client.cluster import Cluster
from weir.client.errors import error_for
from weir.client.partitioner import partition_for_key_python
from weir.protocol.errors import Errors
from weir.protocol.record_builder import arrow_column
from tests.client.txn_helpers import new_topic, read_committed
from tests.support.topics import create_topic
from tests.pipeline.prepared import visible, write_prepared

pytestmark = pytest.mark.timeout(300)


async def driver(bootstrap: str) -> Cluster:
    cluster = Cluster(bootstrap)  # another process's connection: it knows the transaction only by its state
    await cluster.refresh([])
    return cluster


async def test_a_prepared_transaction_stays_open_until_another_process_commits_it(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await new_topic(bootstrap, topic_name, 2)
    values = [f"v{i}".encode() for i in range(50)]
    written = await write_prepared(bootstrap, f"{topic_name}-t0", topic_name, values)
    assert written.partitions == [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
    # The producer is closed; its transaction is not aborted: invisible, and holding the LSO back.
    committed, committed_ends = await visible(bootstrap, topic_name, 2)
    everything, ends = await visible(bootstrap, topic_name, 2, "read_uncommitted")
    assert committed == [] and everything == sorted(values) and committed_ends != ends

    cluster = await driver(bootstrap)
    await complete_prepared_transaction(cluster, written.transactional_id, written.prepared, commit=True)
    # A roll-forward repeated after a driver crash is answered with success.
    await complete_prepared_transaction(cluster, written.transactional_id, written.prepared, commit=True)
    await cluster.close()
    assert sorted(await read_committed(bootstrap, topic_name, 2)) == sorted(values)


async def test_an_aborted_hand_off_shows_nothing_and_frees_the_stable_offset(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await new_topic(bootstrap, topic_name, 1)
    written = await write_prepared(bootstrap, f"{topic_name}-t0", topic_name, [b"never"])
    cluster = await driver(bootstrap)
    await complete_prepared_transaction(cluster, written.transactional_id, written.prepared, commit=False)
    await cluster.close()
    (values, committed_end), (_all, end) = (await visible(bootstrap, topic_name, 1),
                                            await visible(bootstrap, topic_name, 1, "read_uncommitted"))
    assert values == [] and committed_end == end


async def test_fencing_the_id_aborts_the_prepared_transaction_and_its_commit_is_refused(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await new_topic(bootstrap, topic_name, 1)
    dead = await write_prepared(bootstrap, f"{topic_name}-t0", topic_name, [b"lost"])
    cluster = await driver(bootstrap)
    fenced = await fence_transactional_id(cluster, dead.transactional_id)
    assert fenced.producer_id == dead.producer_id and fenced.producer_epoch > dead.producer_epoch
    with pytest.raises(error_for(Errors.PRODUCER_FENCED)):
        await complete_prepared_transaction(cluster, dead.transactional_id, dead.prepared, commit=True)
    assert (await fence_transactional_id(cluster, f"{topic_name}-never-used")).producer_epoch == 0
    await cluster.close()
    (values, committed_end), (_all, end) = (await visible(bootstrap, topic_name, 1),
                                            await visible(bootstrap, topic_name, 1, "read_uncommitted"))
    assert values == [] and committed_end == end


async def test_a_prepared_producer_sends_nothing_more_but_can_still_end_its_transaction(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await new_topic(bootstrap, topic_name, 1)
    async with Producer(bootstrap, transactional_id=f"{topic_name}-t0") as producer:
        producer.begin_transaction()
        await producer.send(topic_name, b"prepared here, committed here")
        prepared = await producer.prepare_transaction()
        assert prepared == PreparedTxnState(producer.sender.identity.producer_id,
                                            producer.sender.identity.producer_epoch)
        with pytest.raises(Exception, match="PREPARED_TRANSACTION"):
            await producer.send(topic_name, b"too late")
        await producer.commit_transaction()
    assert await read_committed(bootstrap, topic_name) == [b"prepared here, committed here"]


def arrow(keys, values):
    return arrow_column(pa.array(keys, pa.binary())), arrow_column(pa.array(values, pa.binary()))


async def test_arrow_rows_land_where_keyed_sends_would_in_order_on_both_brokers(any_broker, topic_name):
    """Many small batches per partition, several in flight: every row once, each partition in row order,
    keyed rows on murmur2's partition, null keys spread round-robin."""
    bootstrap = any_broker.bootstrap
    await new_topic(bootstrap, topic_name, 3)
    keys = [None if n % 5 == 0 else f"customer-{n % 17}".encode() for n in range(3000)]
    values = [f"{n:06}".encode() * 4 for n in range(3000)]
    async with Producer(bootstrap, transactional_id=f"{topic_name}-t0", batch_size=200) as producer:
        producer.begin_transaction()
        first, second = (await producer.send_arrow(topic_name, *arrow(keys[:1000], values[:1000]), 1000),
                         await producer.send_arrow(topic_name, *arrow(keys[1000:], values[1000:]), 2000))
        await producer.commit_transaction()
        assert (first.result(), second.result()) == (1000, 2000)
    async with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as consumer:
        tps = [TopicPartition(topic_name, p) for p in range(3)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        got = {p: [] for p in range(3)}
        deadline = asyncio.get_running_loop().time() + 60  # Kafka writes markers after EndTxn answers
        while sum(map(len, got.values())) < len(values) and asyncio.get_running_loop().time() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                got[tp.partition] += [(r.key, r.value) for r in records]
    by_row = sorted((r for part in got.values() for r in part), key=lambda r: r[1])
    assert by_row == list(zip(keys, values, strict=False))  # every row once, with its key
    for partition, received in got.items():
        numbers = [int(value[:6]) for _key, value in received]
        assert numbers == sorted(numbers)  # row order within the partition
        assert all(partition_for_key_python(key, 3) == partition for key, _v in received if key is not None)
    null_counts = [sum(1 for key, _v in received if key is None) for received in got.values()]
    assert max(null_counts) - min(null_counts) <= 1


async def test_arrow_rows_wait_for_room_in_a_full_buffer(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await new_topic(bootstrap, topic_name, 3)
    values = [f"record {i}".encode() * 4 for i in range(400)]
    async with Producer(bootstrap, batch_size=100, buffer_memory=300) as producer:
        delivery = await producer.send_arrow(topic_name, *arrow([None] * 400, values), 400)
        assert producer.accumulator.bytes_held <= 300 + 200  # at most one open batch past the limit
        assert await delivery == 400
    assert sorted(await read_committed(bootstrap, topic_name, 3)) == sorted(values)


async def test_an_arrow_send_fails_with_its_batch_error(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 1, {"max.message.bytes": "2000"})
    async with Producer(bootstrap, retry_backoff_ms=10) as producer:
        fine = await producer.send_arrow(topic_name, *arrow([None], [b"small"]), 1)
        assert await fine == 1
        too_large = await producer.send_arrow(topic_name, *arrow([None], [b"x" * 5000]), 1)
        with pytest.raises(error_for(Errors.MESSAGE_TOO_LARGE)):
            await too_large


async def test_produce_records_have_no_future_and_arrive_in_order(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 2)
    values = [f"record {i}".encode() * 9 for i in range(3000)]
    async with Producer(bootstrap, batch_size=4000, linger_ms=5) as producer:
        for i, value in enumerate(values):
            assert await producer.produce(topic_name, value, partition=i % 2, headers=[("i", b"%d" % i)]) is None
        await producer.flush()
        assert producer.accumulator.bytes_held == 0  # every batch settled
    by_partition = await read_committed(bootstrap, topic_name, 2)
    assert sorted(by_partition) == sorted(values)
    evens = set(values[0::2])
    assert [v for v in by_partition if v in evens] == values[0::2]  # partition 0's, in order


async def test_produce_errors_come_from_the_next_flush(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 1, {"max.message.bytes": "2000"})
    async with Producer(bootstrap, retry_backoff_ms=10) as producer:
        await producer.produce(topic_name, b"small")
        await producer.flush()
        await producer.produce(topic_name, b"x" * 5000)
        with pytest.raises(error_for(Errors.MESSAGE_TOO_LARGE)):
            await producer.flush()
        await producer.flush()  # reported once
        delivery = await producer.send(topic_name, b"x" * 5000)  # a send's error stays in its future
        await producer.flush()
        with pytest.raises(error_for(Errors.MESSAGE_TOO_LARGE)):
            await delivery
