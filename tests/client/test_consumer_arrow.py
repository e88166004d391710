"""Consumer.getmany_arrow against the real broker process, fed by confluent-kafka: the same records as
getmany, as Arrow columns built in C (compressed batches, transactions, headers, nulls, max_records)."""

import asyncio

import pyarrow as pa
import pytest
from confluent_kafka import Producer as CKProducer

from weir.client import Consumer, TopicPartition
from weir.protocol.record_arrow import ACCELERATED
from tests.support.topics import KEEP_FOREVER, create_topic

SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), pa.field("offset", pa.int64(), nullable=False),
                    pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
                    pa.field("timestamp_type", pa.int8(), nullable=False),
                    pa.field("headers", pa.list_(pa.field("item", pa.struct([
                        pa.field("key", pa.string(), nullable=False), ("value", pa.binary())]), nullable=False)),
                        nullable=False)])


def test_the_c_walk_is_built():
    assert ACCELERATED  # `make install-test` builds the extensions; without it getmany_arrow is the slow twin


def _produce(bootstrap, topic, compression, count=3000):
    """Keys, null keys, null values, headers (one with a null value) and explicit timestamps."""
    producer = CKProducer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 20,
                           "enable.idempotence": True})
    for i in range(count):
        producer.produce(topic, None if i % 13 == 0 else f"value-{i}".encode() * (i % 5 + 1),
                         None if i % 3 == 0 else f"k{i % 7}".encode(), partition=i % 2,
                         headers=[("n", str(i).encode()), ("empty", None)] if i % 4 == 0 else None,
                         timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0


def _rows(records):
    return [(r.key, r.value, r.offset, r.timestamp, r.timestamp_type, [{"key": k, "value": v} for k, v in r.headers])
            for r in records]


def _arrow_rows(batch):
    assert batch.schema == SCHEMA
    batch.validate(full=True)
    columns = batch.to_pydict()
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    return list(zip(columns["key"], columns["value"], columns["offset"], stamps, columns["timestamp_type"],
                    columns["headers"], strict=True))


async def _read(consumer, count, get, **options):
    """Everything ``get`` (getmany or getmany_arrow) returns until ``count`` rows, per partition in order."""
    got: dict[TopicPartition, list] = {}
    deadline = asyncio.get_running_loop().time() + 60
    while sum(map(len, got.values())) < count:
        assert asyncio.get_running_loop().time() < deadline, f"only {sum(map(len, got.values()))} of {count}"
        for tp, taken in (await get(consumer)(timeout_ms=500, **options)).items():
            got.setdefault(tp, []).extend(_arrow_rows(taken) if isinstance(taken, pa.RecordBatch) else _rows(taken))
    return got


def _getmany(consumer):
    return consumer.getmany


def _getmany_arrow(consumer):
    return consumer.getmany_arrow


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
async def test_arrow_columns_hold_what_getmany_returns(shared_broker, topic_name, compression):
    await asyncio.to_thread(create_topic, shared_broker.bootstrap, topic_name, 2, KEEP_FOREVER)
    await asyncio.to_thread(_produce, shared_broker.bootstrap, topic_name, compression)
    partitions = [TopicPartition(topic_name, p) for p in range(2)]
    results = []
    for get in (_getmany, _getmany_arrow):
        async with Consumer(bootstrap_servers=shared_broker.bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign(partitions)
            results.append(await _read(consumer, 3000, get, max_records=100_000))
            assert [await consumer.position(tp) for tp in partitions] == [1500, 1500]
    by_records, by_arrow = results
    assert by_arrow == by_records
    first = by_arrow[partitions[0]][:2]
    assert first[0] == (None, None, 0, 1_700_000_000_000, 0, [{"key": "n", "value": b"0"},
                                                               {"key": "empty", "value": None}])
    assert first[1] == (b"k2", b"value-2" * 3, 1, 1_700_000_000_002, 0, [])


async def test_max_records_and_mixing_with_getmany_hand_out_each_record_once(shared_broker, topic_name):
    await asyncio.to_thread(create_topic, shared_broker.bootstrap, topic_name, 2, KEEP_FOREVER)
    await asyncio.to_thread(_produce, shared_broker.bootstrap, topic_name, "lz4")
    partitions = [TopicPartition(topic_name, p) for p in range(2)]
    async with Consumer(bootstrap_servers=shared_broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign(partitions)
        offsets: dict[TopicPartition, list[int]] = {tp: [] for tp in partitions}
        deadline = asyncio.get_running_loop().time() + 60
        turn = 0
        while sum(map(len, offsets.values())) < 3000:
            assert asyncio.get_running_loop().time() < deadline
            turn += 1
            get = consumer.getmany_arrow if turn % 3 else consumer.getmany  # both, in turn, mid-answer
            for tp, taken in (await get(timeout_ms=500, max_records=37)).items():
                assert len(taken) <= 37
                if isinstance(taken, pa.RecordBatch):
                    offsets[tp].extend(taken.column("offset").to_pylist())
                else:
                    offsets[tp].extend(r.offset for r in taken)
        assert offsets == {tp: list(range(1500)) for tp in partitions}
        assert await consumer.getmany_arrow(timeout_ms=200) == {}


def _transactions(bootstrap, topic):
    """Committed 0-99, aborted 100-199, committed 200-299 (zstd), with a plain writer in between."""
    producer = CKProducer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn",
                           "compression.type": "zstd"})
    plain = CKProducer({"bootstrap.servers": bootstrap})
    producer.init_transactions()
    for start, commit in ((0, True), (100, False), (200, True)):
        producer.begin_transaction()
        for i in range(start, start + 100):
            producer.produce(topic, str(i).encode(), partition=0)
            if i % 50 == 0:
                plain.produce(topic, f"plain-{i}".encode(), partition=0)
                plain.flush()
        producer.flush()
        (producer.commit_transaction if commit else producer.abort_transaction)()


async def test_read_committed_columns_skip_aborted_records_and_never_show_markers(shared_broker, topic_name):
    await asyncio.to_thread(create_topic, shared_broker.bootstrap, topic_name, 1, KEEP_FOREVER)
    await asyncio.to_thread(_transactions, shared_broker.bootstrap, topic_name)
    tp = TopicPartition(topic_name, 0)
    seen = {}
    for isolation, count in (("read_committed", 206), ("read_uncommitted", 306)):
        async with Consumer(bootstrap_servers=shared_broker.bootstrap, auto_offset_reset="earliest",
                            isolation_level=isolation) as consumer:
            consumer.assign([tp])
            rows = (await _read(consumer, count, _getmany_arrow, max_records=1000))[tp]
            assert len(rows) == count
            assert await consumer.position(tp) == (await consumer.end_offsets([tp]))[tp]  # past the last marker
            seen[isolation] = [value.decode() for _key, value, *_ in rows]
    committed = seen["read_committed"]
    assert [v for v in committed if not v.startswith("plain")] == [str(i) for i in (*range(100), *range(200, 300))]
    assert sorted(v for v in committed if v.startswith("plain")) == sorted(f"plain-{i}" for i in range(0, 300, 50))
    assert [v for v in seen["read_uncommitted"] if not v.startswith("plain")] == [str(i) for i in range(300)]
