"""Acknowledged data and producer state survive kill -9; retried batches are never stored twice."""

import threading
import time

from confluent_kafka import Producer

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import init_producer_id, list_offsets
from weir.protocol.records import Record, encode_batch

from ..compat.test_confluent_kafka import consume_all, create_topic
from .test_bad_input import produce_request


def idempotent_batch(producer_id, sequence, value):
    return encode_batch([Record(value), Record(value + b"!")], producer_id=producer_id, producer_epoch=0,
                        base_sequence=sequence)


async def new_producer_id(conn):
    response = await conn.request(ApiKey.INIT_PRODUCER_ID, 4,
                                  init_producer_id.REQUEST(transactional_id=None, transaction_timeout_ms=60000))
    assert response.error_code == 0
    return response.producer_id


async def end_offset(conn, topic):
    response = await conn.request(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(replica_id=-1, topics=[
        list_offsets.RequestTopic(name=topic, partitions=[
            list_offsets.RequestPartition(partition_index=0, timestamp=-1)])]))
    return response.topics[0].partitions[0].offset


async def produce_one(conn, topic, batch):
    response = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic, batch))
    return response.responses[0].partition_responses[0]


async def test_duplicate_batch_is_acknowledged_with_its_original_offset(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        pid = await new_producer_id(conn)
        first = idempotent_batch(pid, 0, b"a")
        second = idempotent_batch(pid, 2, b"b")
        assert (await produce_one(conn, topic_name, first)).base_offset == 0
        assert (await produce_one(conn, topic_name, second)).base_offset == 2
        retried = await produce_one(conn, topic_name, first)  # a resend after a lost response
        assert (retried.error_code, retried.base_offset) == (Errors.NONE, 0)
        assert await end_offset(conn, topic_name) == 4
        gap = await produce_one(conn, topic_name, idempotent_batch(pid, 9, b"c"))
        assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        stale = encode_batch([Record(b"old")], producer_id=pid, producer_epoch=0, base_sequence=4)
        newer = encode_batch([Record(b"new")], producer_id=pid, producer_epoch=3, base_sequence=0)
        assert (await produce_one(conn, topic_name, newer)).error_code == Errors.NONE
        assert (await produce_one(conn, topic_name, stale)).error_code == Errors.INVALID_PRODUCER_EPOCH
    finally:
        await conn.close()


async def test_producer_state_survives_kill_9(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    pid = await new_producer_id(conn)
    batch = idempotent_batch(pid, 0, b"x")
    assert (await produce_one(conn, topic_name, batch)).base_offset == 0
    await conn.close()
    broker.kill()
    broker.start()
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        retried = await produce_one(conn, topic_name, batch)
        assert (retried.error_code, retried.base_offset) == (Errors.NONE, 0)
        assert await end_offset(conn, topic_name) == 2
        gap = await produce_one(conn, topic_name, idempotent_batch(pid, 5, b"y"))
        assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await new_producer_id(conn) > pid, "producer ids are never reused across restarts"
    finally:
        await conn.close()


def test_acknowledged_records_survive_repeated_kill_9(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 3)
    acked = {}
    stop = threading.Event()

    def produce_forever():
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 2,
                             "message.timeout.ms": 60000, "reconnect.backoff.max.ms": 200})

        def on_delivery(err, msg):
            if err is None:
                acked[(msg.partition(), msg.offset())] = msg.value()

        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic_name, value=f"record-{i}".encode(), partition=i % 3, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0.001)
        assert producer.flush(60) == 0

    thread = threading.Thread(target=produce_forever)
    thread.start()
    try:
        for _ in range(3):
            deadline = time.monotonic() + 10
            seen = len(acked)
            while len(acked) < seen + 500 and time.monotonic() < deadline:
                time.sleep(0.01)
            broker.kill()
            broker.start()
    finally:
        stop.set()
        thread.join(90)
    got = consume_all(broker.bootstrap, topic_name, 3, len(acked))
    assert len(acked) > 1500
    missing = {k: v for k, v in acked.items() if got.get(k, (None, None))[1] != v}
    assert not missing, f"{len(missing)} acknowledged records lost or moved, e.g. {list(missing.items())[:3]}"
    values = [value for _key, value in got.values()]
    assert len(values) == len(set(values)), "an idempotent producer's retry was stored twice"


async def test_torn_tail_is_truncated_and_indexes_rebuilt(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    for i in range(20):
        await produce_one(conn, topic_name, encode_batch([Record(b"r%d" % i)]))
    await conn.close()
    broker.kill()
    directory = broker.data_dir / f"{topic_name}-0"
    log_file = next(directory.glob("*.log"))
    whole = log_file.read_bytes()
    log_file.write_bytes(whole + encode_batch([Record(b"torn" * 100)])[:150])  # a half-written batch
    for index in directory.glob("*.index"):
        index.write_bytes(b"\x01\x02\x03")  # a torn index entry
    broker.start()
    assert broker.log_contains("truncating 150 torn bytes")
    assert log_file.stat().st_size == len(whole)
    got = consume_all(broker.bootstrap, topic_name, 1, 20)
    assert sorted(got) == [(0, i) for i in range(20)]
    assert [got[(0, i)][1] for i in range(20)] == [b"r%d" % i for i in range(20)]


async def test_a_kill_9_amid_restart_point_writes_restarts_whole(broker, topic_name):
    """At the defaults the loop queues an index checkpoint every 256 KiB and a producer snapshot
    every 2,048 offsets for a thread to write (broker/log/restart_writer.py): a kill -9 right after
    the last acknowledgement finds some written and some not, and the restart is whole either way."""
    conn = await Connection.open("127.0.0.1", broker.port)
    pid = await new_producer_id(conn)
    batches = [idempotent_batch(pid, 2 * i, b"%05d" % i + b"v" * 1000) for i in range(3000)]  # ~6 MB
    for i, batch in enumerate(batches):
        assert (await produce_one(conn, topic_name, batch)).base_offset == 2 * i
    await conn.close()
    broker.kill()
    broker.start()
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        retried = await produce_one(conn, topic_name, batches[-1])
        assert (retried.error_code, retried.base_offset) == (Errors.NONE, 5998), "the producer state replayed"
        assert (await produce_one(conn, topic_name, idempotent_batch(pid, 6000, b"after"))).base_offset == 6000
    finally:
        await conn.close()
    got = consume_all(broker.bootstrap, topic_name, 1, 6002)
    assert [got[(0, offset)][1] for offset in range(0, 6000, 2)] == [b"%05d" % i + b"v" * 1000 for i in range(3000)]
    assert got[(0, 6000)][1] == b"after"
