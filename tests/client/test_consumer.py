"""Our Consumer against the real broker process, fed by confluent-kafka and by our Producer."""

import asyncio

from confluent_kafka import Producer as CKProducer

from weir.client import Consumer, Producer, TopicPartition
from tests.support.topics import create_topic


async def read(consumer, expected, timeout=20.0):
    got = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(got) < expected:
        assert asyncio.get_running_loop().time() < deadline, f"only {len(got)} of {expected} records"
        for batch in (await consumer.getmany(timeout_ms=500)).values():
            got.extend(batch)
    return got


async def test_assigned_partitions_read_everything_our_producer_wrote(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 3)
    async with Producer(any_broker.bootstrap, compression_type="lz4") as producer:
        deliveries = [await producer.send(topic_name, f"v{i}".encode(), f"k{i % 11}".encode(),
                                          headers=[("i", str(i).encode())]) for i in range(1500)]
        acked = await asyncio.gather(*deliveries)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic_name, p) for p in range(3)])
        records = await read(consumer, 1500)
        for p in range(3):
            assert await consumer.position(TopicPartition(topic_name, p)) == \
                sum(1 for a in acked if a.partition == p)
    by_place = {(r.partition, r.offset): r for r in records}
    assert len(by_place) == 1500
    for i, metadata in enumerate(acked):
        record = by_place[(metadata.partition, metadata.offset)]
        assert (record.key, record.value, record.headers) == (f"k{i % 11}".encode(), f"v{i}".encode(),
                                                              [("i", str(i).encode())])


def _transactions(bootstrap, topic):
    """committed 0-9, aborted 10-19, committed 20-29, all on partition 0, interleaved with a plain writer."""
    producer = CKProducer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    plain = CKProducer({"bootstrap.servers": bootstrap})
    producer.init_transactions()
    for start, commit in ((0, True), (10, False), (20, True)):
        producer.begin_transaction()
        for i in range(start, start + 10):
            producer.produce(topic, str(i).encode(), partition=0)
            if i % 5 == 0:
                plain.produce(topic, f"plain-{i}".encode(), partition=0)
                plain.flush()
        producer.flush()
        (producer.commit_transaction if commit else producer.abort_transaction)()


async def test_read_committed_drops_aborted_batches_and_markers(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 1)
    await asyncio.to_thread(_transactions, any_broker.bootstrap, topic_name)
    tp = TopicPartition(topic_name, 0)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest") as committed:
        committed.assign([tp])
        seen = [r.value.decode() for r in await read(committed, 26)]
        end = await committed.end_offsets([tp])
        assert await committed.position(tp) == end[tp]  # past the last marker
    assert [v for v in seen if not v.startswith("plain")] == [str(i) for i in (*range(10), *range(20, 30))]
    assert sorted(v for v in seen if v.startswith("plain")) == sorted(f"plain-{i}" for i in range(0, 30, 5))
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest",
                        isolation_level="read_uncommitted") as uncommitted:
        uncommitted.assign([tp])
        everything = [r.value.decode() for r in await read(uncommitted, 36)]
    assert [v for v in everything if not v.startswith("plain")] == [str(i) for i in range(30)]


async def test_seek_pause_resume_and_offsets_for_times(any_broker, topic_name):
    async with Producer(any_broker.bootstrap) as producer:
        for i in range(20):
            await producer.send_and_wait(topic_name, str(i).encode(), partition=0, timestamp_ms=1000 * (i + 1))
    tp = TopicPartition(topic_name, 0)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert (await consumer.offsets_for_times({tp: 5500}))[tp] == (5, 6000)
        consumer.seek(tp, 15)
        assert [r.offset for r in await read(consumer, 5)] == [15, 16, 17, 18, 19]
        await consumer.seek_to_beginning(tp)
        consumer.pause(tp)
        assert await consumer.getmany(timeout_ms=300) == {}
        consumer.resume(tp)
        assert (await read(consumer, 20))[0].offset == 0


async def test_getmany_for_some_partitions_keeps_the_others_buffered(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 2)
    async with Producer(any_broker.bootstrap) as producer:
        for i in range(20):
            await producer.send(topic_name, str(i).encode(), partition=i % 2)
    first, second = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([first, second])
        only_first = []
        while len(only_first) < 10:
            got = await consumer.getmany(first, timeout_ms=500)
            assert set(got) <= {first}
            only_first.extend(got.get(first, []))
        assert [r.offset for r in await read(consumer, 10)] == list(range(10))  # partition 1, nothing lost


async def test_the_next_fetch_goes_out_while_the_application_holds_undelivered_records(any_broker, topic_name):
    """Prefetch: fetching overlaps processing (one answer ahead), positions stay exact, a seek
    drops what was prefetched."""
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 1)
    async with Producer(any_broker.bootstrap, batch_size=400, linger_ms=0) as producer:
        await asyncio.gather(*[await producer.send(topic_name, bytes(100), partition=0) for _ in range(300)])
    tp = TopicPartition(topic_name, 0)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest",
                        max_partition_fetch_bytes=2000) as consumer:
        consumer.assign([tp])
        first = []
        while not first:
            first = (await consumer.getmany(timeout_ms=500, max_records=1)).get(tp, [])
        assert first[0].offset == 0 and await consumer.position(tp) == 1
        state = consumer.fetcher.states[tp]
        first_answer_end = state.buffered[0].end  # the application still holds most of this answer
        deadline = asyncio.get_running_loop().time() + 20
        while state.fetch_position <= first_answer_end:  # a second Fetch went out and was answered
            assert asyncio.get_running_loop().time() < deadline, "no fetch while records were undelivered"
            await asyncio.sleep(0.01)
        assert len(state.buffered) == 2 and await consumer.position(tp) == 1
        rest = await read(consumer, first_answer_end - 1 + 5)
        assert [r.offset for r in rest] == list(range(1, len(rest) + 1))
        consumer.seek(tp, 7)
        assert state.buffered == type(state.buffered)() and await consumer.position(tp) == 7
        assert (await read(consumer, 1))[0].offset == 7


async def test_a_caught_up_partition_is_still_fetched_while_another_waits_undrained(any_broker, topic_name):
    """The fetch of caught-up partitions may wait for held-back ones, but not for ever: an
    application reading only the caught-up partition gets its new records."""
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 2)
    quiet, busy = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    async with Producer(any_broker.bootstrap, batch_size=400, linger_ms=0) as producer:
        await producer.send_and_wait(topic_name, b"first", partition=0)
        await asyncio.gather(*[await producer.send(topic_name, bytes(100), partition=1) for _ in range(300)])
        async with Consumer(bootstrap_servers=any_broker.bootstrap, auto_offset_reset="earliest",
                            max_partition_fetch_bytes=2000) as consumer:
            consumer.assign([quiet, busy])
            assert [r.value for r in await read_only(consumer, quiet, 1)] == [b"first"]
            deadline = asyncio.get_running_loop().time() + 20
            while len(consumer.fetcher.states[busy].buffered) < 2:  # held back by the prefetch bound
                assert asyncio.get_running_loop().time() < deadline, "the busy partition was not prefetched"
                await asyncio.sleep(0.01)
            await producer.send_and_wait(topic_name, b"second", partition=0)
            assert [r.value for r in await read_only(consumer, quiet, 1)] == [b"second"]


async def read_only(consumer, tp, expected, timeout=20.0):
    got = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(got) < expected:
        assert asyncio.get_running_loop().time() < deadline, f"only {len(got)} of {expected} records"
        got.extend((await consumer.getmany(tp, timeout_ms=500)).get(tp, []))
    return got
