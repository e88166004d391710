"""The sink's raw-protocol transactions and decision log against the real broker (no Spark)."""

import asyncio

from weir.client import Consumer, TopicPartition
from weir.client.cluster import Cluster
from weir.pipeline.decisions import COMMIT, DONE, DecisionLog
from weir.pipeline.transactions import TransactionalWriter, end_transaction, init_producer_id
from weir.protocol.errors import Errors
from tests.compat.test_confluent_kafka import create_topic


async def visible(bootstrap, topic, partitions, isolation="read_committed"):
    """Every record of ``topic`` up to the end offsets (the LSO under read_committed)."""
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


async def write(bootstrap, txn_id, topic, values, **kwargs):
    cluster = Cluster(bootstrap)
    writer = TransactionalWriter(cluster, txn_id, batch_size=64, **kwargs)
    await writer.begin()
    for value in values:
        await writer.append(topic, None, None, value, None, 0)
    await writer.flush()
    await cluster.close()
    return writer


async def test_flushed_transaction_stays_invisible_until_the_driver_commits_it(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 2)
    values = [f"v{i}".encode() for i in range(50)]
    writer = await write(bootstrap, f"{topic_name}-t0", topic_name, values)
    assert writer.partitions == [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
    assert (await visible(bootstrap, topic_name, 2))[0] == []
    assert (await visible(bootstrap, topic_name, 2, "read_uncommitted"))[0] == sorted(values)

    driver = Cluster(bootstrap)  # another process's connection: resumes by producer id and epoch
    await driver.refresh([])
    assert await end_transaction(driver, writer.transactional_id, writer.producer_id, writer.producer_epoch,
                                 True) == Errors.NONE
    # A roll-forward repeated after a crash is answered with success.
    assert await end_transaction(driver, writer.transactional_id, writer.producer_id, writer.producer_epoch,
                                 True) == Errors.NONE
    await driver.close()
    assert (await visible(bootstrap, topic_name, 2))[0] == sorted(values)


async def test_taking_the_id_again_fences_and_aborts_the_open_transaction(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 1)
    dead = await write(bootstrap, f"{topic_name}-t0", topic_name, [b"lost"])
    cluster = Cluster(bootstrap)
    await cluster.refresh([])
    producer_id, epoch = await init_producer_id(cluster, dead.transactional_id, 60000)
    assert producer_id == dead.producer_id and epoch > dead.producer_epoch  # Kafka bumps once to abort, once more
    assert await end_transaction(cluster, dead.transactional_id, dead.producer_id, dead.producer_epoch,
                                 True) in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH)
    fresh, fresh_epoch = await init_producer_id(cluster, f"{topic_name}-never-used", 60000)
    assert fresh_epoch == 0
    await cluster.close()
    values, committed_end = await visible(bootstrap, topic_name, 1)
    _all, uncommitted_end = await visible(bootstrap, topic_name, 1, "read_uncommitted")
    assert values == [] and committed_end == uncommitted_end  # aborted: nothing holds the LSO back


async def test_decision_log_returns_the_latest_record_of_its_query(shared_broker, topic_name):
    first = DecisionLog(shared_broker.bootstrap, f"decisions-{topic_name}", "query-a")
    other = DecisionLog(shared_broker.bootstrap, f"decisions-{topic_name}", "query-b")
    assert await first.latest() is None
    await first.write({"batch": 0, "state": COMMIT, "tasks": 1, "txns": [["t", 5, 0]]})
    await other.write({"batch": 9, "state": COMMIT, "tasks": 1, "txns": []})
    await first.write({"batch": 0, "state": DONE, "tasks": 1})
    assert await first.latest() == {"batch": 0, "state": DONE, "tasks": 1}
    assert (await other.latest())["batch"] == 9


async def test_a_full_buffer_makes_the_task_wait_for_acknowledgements(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 3)
    values = [f"record {i}".encode() * 4 for i in range(400)]
    writer = await write(bootstrap, f"{topic_name}-t0", topic_name, values, buffer_memory=300)
    assert writer.records == 400 and writer._unacked_bytes == 0
    cluster = Cluster(bootstrap)
    await cluster.refresh([])
    assert await end_transaction(cluster, writer.transactional_id, writer.producer_id, writer.producer_epoch,
                                 True) == Errors.NONE
    await cluster.close()
    assert (await visible(bootstrap, topic_name, 3))[0] == sorted(values)


async def test_pipelined_batches_land_in_sequence_order_on_both_brokers(any_broker, topic_name):
    """Many small batches per partition, several in flight: every record once, each partition in append order."""
    bootstrap = any_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 2)
    cluster = Cluster(bootstrap)
    writer = TransactionalWriter(cluster, f"{topic_name}-t0", batch_size=200)
    await writer.begin()
    count = await writer.partition_count(topic_name)
    rows = [(topic_name, n % count, None, f"{n:06}".encode() * 4, None, 0) for n in range(3000)]
    await writer.append_all(rows)
    await writer.flush()
    assert max(lane.most_in_flight for lane in writer._lanes.values()) > 1
    assert await end_transaction(cluster, writer.transactional_id, writer.producer_id, writer.producer_epoch,
                                 True) == Errors.NONE
    await cluster.close()
    # Kafka writes the commit markers after EndTxn answers: read until every record is there (deadline)
    async with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as consumer:
        tps = [TopicPartition(topic_name, p) for p in range(count)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        got = {tp.partition: [] for tp in tps}
        deadline = asyncio.get_running_loop().time() + 60
        while sum(map(len, got.values())) < len(rows) and asyncio.get_running_loop().time() < deadline:
            for tp, batch in (await consumer.getmany(timeout_ms=500)).items():
                got[tp.partition] += [r.value for r in batch]
    for partition in range(count):
        assert got[partition] == [row[3] for row in rows if row[1] == partition]
