"""Transaction flows with aiokafka 0.14, on Weir and on Apache Kafka.

The same assertions run against both brokers; they were written from Kafka's behaviour.
aiokafka sends v0 of every transaction API: InitProducerId v0 (no KIP-360 recovery),
TxnOffsetCommit v0 (no KIP-447 group metadata: ``send_offsets_to_transaction`` takes a bare
group id) and OffsetFetch v1-3, which has no require_stable, so its ``committed()`` shows
the last stable offset even under read_committed while a transactional one is pending.
"""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced

from tests.compat.test_aiokafka import create_topic
from tests.reference import flows
from tests.support.waiting import wait_until_async


async def txn_producer(bootstrap, txn_id, **config):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, **config)
    await producer.start()
    return producer


async def in_txn(producer, sends, commit=True):
    await producer.begin_transaction()
    for topic, partition, value in sends:
        await (await producer.send(topic, value, partition=partition))
    if commit:
        await producer.commit_transaction()
    else:
        await producer.abort_transaction()


async def plain_produce(bootstrap, topic, value):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, partition=0)
    finally:
        await producer.stop()


class Reader:
    """An assigned consumer reading (offset, value) pairs up to the end offset of its isolation level.

    aiokafka moves its position past control batches, so reaching ``end_offsets`` (the LSO
    under read_committed, the high watermark otherwise) means everything was read."""

    def __init__(self, consumer, tps):
        self.consumer, self.tps = consumer, tps
        self.got = {tp.partition: [] for tp in tps}

    @classmethod
    async def open(cls, bootstrap, topic, partitions, isolation, start=0, **config):
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    isolation_level=isolation, fetch_max_wait_ms=100, **config)
        await consumer.start()
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, start)
        return cls(consumer, tps)

    async def poll(self, timeout_ms=200):
        batches = await self.consumer.getmany(*self.tps, timeout_ms=timeout_ms)
        for tp, messages in batches.items():
            self.got[tp.partition] += [(m.offset, m.value) for m in messages]
        return batches

    async def to_end(self):
        ends = await self.consumer.end_offsets(self.tps)
        async with asyncio.timeout(flows.DEADLINE_S):
            for tp in self.tps:
                while await self.consumer.position(tp) < ends[tp]:
                    await self.poll()
        return self.got

    async def close(self):
        await self.consumer.stop()


async def read_to_end(bootstrap, topic, partitions, isolation, start=0, **config):
    reader = await Reader.open(bootstrap, topic, partitions, isolation, start, **config)
    try:
        return await reader.to_end()
    finally:
        await reader.close()


async def end_offset(bootstrap, topic, isolation):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        return (await consumer.end_offsets([tp]))[tp]
    finally:
        await consumer.stop()


async def end_offsets(bootstrap, topic):
    """(read_uncommitted, read_committed) end offsets of partition 0."""
    return (await end_offset(bootstrap, topic, "read_uncommitted"),
            await end_offset(bootstrap, topic, "read_committed"))


async def test_committed_records_reach_read_committed_and_aborted_ones_never(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 2)
    producer = await txn_producer(bootstrap, topic_name)
    try:
        for label, commit in ((b"c1", True), (b"ab", False), (b"c2", True)):
            await in_txn(producer, [(topic_name, p, label) for p in (0, 1)], commit=commit)
    finally:
        await producer.stop()
    assert await read_to_end(bootstrap, topic_name, [0, 1], "read_committed") == {
        p: flows.VISIBILITY_COMMITTED for p in (0, 1)}
    assert await read_to_end(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        p: flows.VISIBILITY_ALL for p in (0, 1)}
    assert await end_offsets(bootstrap, topic_name) == (flows.VISIBILITY_END, flows.VISIBILITY_END)


async def test_interleaved_transactions_read_committed_from_any_offset(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    aborted = await txn_producer(bootstrap, topic_name + "-a")
    committed = await txn_producer(bootstrap, topic_name + "-b")
    try:
        for producer in (aborted, committed):
            await producer.begin_transaction()
        for index in range(2):
            for producer, name in ((aborted, b"a"), (committed, b"b")):
                await (await producer.send(topic_name, name + b"%d" % index, partition=0))
        await plain_produce(bootstrap, topic_name, b"plain")
        await aborted.abort_transaction()
        await committed.commit_transaction()
    finally:
        for producer in (aborted, committed):
            await producer.stop()
    assert await read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {0: flows.INTERLEAVED_ALL}
    for start in flows.INTERLEAVED_STARTS:
        for config in ({}, {"max_partition_fetch_bytes": 1}):  # one batch per fetch
            assert await read_to_end(bootstrap, topic_name, [0], "read_committed", start, **config) == {
                0: flows.interleaved_committed(start)}, (start, config)
    assert await end_offsets(bootstrap, topic_name) == (flows.INTERLEAVED_END, flows.INTERLEAVED_END)


async def _end_is(bootstrap, topic, offset) -> bool:
    return (await end_offsets(bootstrap, topic))[0] == offset


@pytest.mark.parametrize("outcome", ["commit", "abort"])
async def test_open_transaction_holds_read_committed_at_the_lso_until_it_ends(any_broker, topic_name, outcome):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    await plain_produce(bootstrap, topic_name, b"before")
    held = await txn_producer(bootstrap, topic_name + "-held")
    other = await txn_producer(bootstrap, topic_name + "-other")
    reader = None
    try:
        await held.begin_transaction()
        for value in (b"h0", b"h1"):
            await (await held.send(topic_name, value, partition=0))
        await plain_produce(bootstrap, topic_name, b"plain")
        await in_txn(other, [(topic_name, 0, b"other")])

        # The other transaction's COMMIT marker lands just after its EndTxn is answered (Kafka writes
        # markers once it has answered): wait for it, then check where the LSO stayed.
        await wait_until_async(lambda: _end_is(bootstrap, topic_name, flows.HELD_END_OPEN), "the other's marker")
        assert await end_offsets(bootstrap, topic_name) == (flows.HELD_END_OPEN, flows.HELD_LSO)
        reader = await Reader.open(bootstrap, topic_name, [0], "read_committed")
        assert await reader.to_end() == {0: flows.HELD_BEFORE}
        tp = reader.tps[0]
        assert (reader.consumer.last_stable_offset(tp), reader.consumer.highwater(tp)) == (
            flows.HELD_LSO, flows.HELD_END_OPEN)
        async with asyncio.timeout(flows.HELD_WINDOW_S * 3):
            held_for = asyncio.get_running_loop().time() + flows.HELD_WINDOW_S
            while asyncio.get_running_loop().time() < held_for:
                assert await reader.poll(timeout_ms=100) == {}  # "plain" and "other" wait behind the LSO
        assert await read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {0: [
            (0, b"before"), (1, b"h0"), (2, b"h1"), (3, b"plain"), (4, b"other")]}

        if outcome == "commit":
            await held.commit_transaction()
        else:
            await held.abort_transaction()
        expected = flows.HELD_BEFORE + flows.HELD_AFTER[outcome]
        async with asyncio.timeout(flows.DEADLINE_S):
            while reader.got[0] != expected:
                assert len(reader.got[0]) < len(expected), reader.got
                await reader.poll()
        assert await end_offsets(bootstrap, topic_name) == (flows.HELD_END, flows.HELD_END)
    finally:
        for closing in (held, other):
            await closing.stop()
        if reader is not None:
            await reader.close()


async def test_a_stalled_transaction_is_aborted_by_the_broker_after_its_timeout(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    stalled = await txn_producer(bootstrap, topic_name, transaction_timeout_ms=flows.STALL_TIMEOUT_MS)
    try:
        await stalled.begin_transaction()
        await (await stalled.send(topic_name, b"stalled", partition=0))
        await plain_produce(bootstrap, topic_name, b"after")
        reader = await Reader.open(bootstrap, topic_name, [0], "read_committed")
        try:
            async with asyncio.timeout(flows.DEADLINE_S):
                while not reader.got[0]:  # only the broker's abort releases "after"
                    await reader.poll()
            assert reader.got == {0: [(1, b"after")]}  # "stalled" @0, "after" @1, the ABORT @2
        finally:
            await reader.close()
        assert await read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {
            0: [(0, b"stalled"), (1, b"after")]}

        # the broker bumped the epoch when it aborted: the Produce gets INVALID_PRODUCER_EPOCH
        with pytest.raises(ProducerFenced):
            await (await stalled.send(topic_name, b"late", partition=0))
    finally:
        await stalled.stop()


async def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 2)
    zombie = await txn_producer(bootstrap, topic_name)
    successor = None
    try:
        await zombie.begin_transaction()
        await (await zombie.send(topic_name, b"zombie", partition=0))
        successor = await txn_producer(bootstrap, topic_name)  # zombie @0, the ABORT of its transaction @1
        with pytest.raises(ProducerFenced):  # AddPartitionsToTxn v0: INVALID_PRODUCER_EPOCH
            await (await zombie.send(topic_name, b"zombie-2", partition=1))
        await in_txn(successor, [(topic_name, 0, b"successor")])
    finally:
        await zombie.stop()
        if successor is not None:
            await successor.stop()
    assert await read_to_end(bootstrap, topic_name, [0, 1], "read_committed") == {0: [(2, b"successor")], 1: []}
    assert await read_to_end(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        0: [(0, b"zombie"), (2, b"successor")], 1: []}


async def _committed(bootstrap, group, tp, isolation):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                isolation_level=isolation)
    await consumer.start()
    try:
        return await consumer.committed(tp)
    finally:
        await consumer.stop()


async def test_offsets_sent_to_a_transaction_count_once_it_commits(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    group = topic_name + "-group"
    tp = TopicPartition(topic_name, 0)
    producer = await txn_producer(bootstrap, topic_name)
    try:
        for offset, outcome in ((10, "commit"), (20, "abort")):
            await producer.begin_transaction()
            await (await producer.send(topic_name, b"out", partition=0))
            await producer.send_offsets_to_transaction({tp: offset}, group)
            before = None if outcome == "commit" else 10  # None: the group has no offset yet
            # OffsetFetch v1-3 has no require_stable: the last stable offset whatever the isolation level
            assert (await _committed(bootstrap, group, tp, "read_committed"),
                    await _committed(bootstrap, group, tp, "read_uncommitted")) == (before, before)
            if outcome == "commit":
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
            assert (await _committed(bootstrap, group, tp, "read_committed"),
                    await _committed(bootstrap, group, tp, "read_uncommitted")) == (10, 10)  # the abort left 10
    finally:
        await producer.stop()
