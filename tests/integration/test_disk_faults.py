"""An injected EIO on each kind of file the broker writes: Kafka's answer on the same connection,
reads going on, the state logged once and shown in the metrics, writes resuming by themselves.

The broker runs with ``WEIR_FAULTS_FILE`` (broker/log/disk.py's test hook): a write to a path
matching a rule there fails with the rule's errno, a data write after writing half its bytes.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request

import pytest

from tests.broker_process import BrokerProcess, free_port
from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (add_partitions_to_txn, create_topics, end_txn, fetch, init_producer_id,
                                    list_offsets, offset_commit, produce)
from weir.protocol.records import Record, decode_batches, encode_batch

TOPIC = "faulty"
FAILING = "writes are failing"
RESUMING = "writes succeed again"


class Faults:
    def __init__(self, path):
        self.path = path

    def set(self, *rules: str) -> None:
        tmp = self.path.with_name("faults.tmp")
        tmp.write_text("".join(rule + "\n" for rule in rules))
        os.replace(tmp, self.path)  # a new inode: the broker rereads it at its next write

    def clear(self) -> None:
        self.set()


@pytest.fixture
def faults(tmp_path):
    return Faults(tmp_path / "faults")


@pytest.fixture
def metrics_port():
    return free_port()


@pytest.fixture
def faulty_broker(tmp_path, faults, metrics_port):
    faults.clear()
    process = BrokerProcess(tmp_path / "data", env={"WEIR_FAULTS_FILE": str(faults.path)},
                            overrides={"metrics.listener": f"127.0.0.1:{metrics_port}"}).start()
    yield process
    process.stop()


@pytest.fixture
async def conn(faulty_broker):
    connection = await Connection.open("127.0.0.1", faulty_broker.port)
    yield connection
    await connection.close()


def offline_gauge(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("kafka_log_logmanager_offlinelogdirectorycount "):
            return float(line.split()[1])
    raise AssertionError("no OfflineLogDirectoryCount gauge")


async def create(conn, name=TOPIC, configs=()):
    answer = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=[],
                                     configs=[create_topics.CreatableTopicConfig(name=k, value=v)
                                              for k, v in configs])]))
    return answer.topics[0].error_code


async def produce_one(conn, value: bytes, topic=TOPIC):
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
        transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=topic, partition_data=[produce.PartitionData(index=0, records=encode_batch([Record(value)]))])]))
    part = answer.responses[0].partition_responses[0]
    return part.error_code, part.base_offset


async def read_all(conn, topic=TOPIC, isolation=0) -> list[bytes]:
    """Every visible record's value, fetching from offset 0 until nothing more comes."""
    values, offset = [], 0
    while True:
        answer = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, isolation_level=isolation, session_id=0,
            session_epoch=-1, topics=[fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 24)])], forgotten_topics_data=[],
            rack_id=""))
        data = answer.responses[0].partitions[0]
        assert data.error_code == Errors.NONE
        batches = list(decode_batches(bytes(data.records or b"")))
        if not batches:
            return values
        for header, records in batches:
            if not header.is_control:
                values.extend(record.value for record in records)
            offset = header.last_offset + 1


async def stable_offset(conn, topic=TOPIC) -> int:
    answer = await conn.request(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(
        replica_id=-1, isolation_level=1, topics=[list_offsets.RequestTopic(
            name=topic, partitions=[list_offsets.RequestPartition(partition_index=0, timestamp=-1)])]))
    return answer.topics[0].partitions[0].offset


async def init(conn, txn_id):
    return await conn.request(ApiKey.INIT_PRODUCER_ID, 4, init_producer_id.REQUEST(
        transactional_id=txn_id, transaction_timeout_ms=60000))


async def commit_offset(conn, group, offset):
    answer = await conn.request(ApiKey.OFFSET_COMMIT, 8, offset_commit.REQUEST(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[offset_commit.RequestTopic(
            name=TOPIC, partitions=[offset_commit.RequestPartition(partition_index=0, committed_offset=offset,
                                                                   committed_metadata="")])]))
    return answer.topics[0].partitions[0].error_code


def assert_one_spell(broker) -> None:
    """The failure and the recovery each logged once, and no request's traceback."""
    assert sum(FAILING in line for line in broker.lines) == 1, "".join(broker.lines[-40:])
    assert broker.wait_for_log(RESUMING)
    assert not broker.log_contains("Traceback"), "".join(broker.lines)[-5000:]
    assert not broker.log_contains("closing the connection")


async def test_eio_on_a_partition_log_answers_storage_error_and_cuts_the_torn_write(conn, faulty_broker, faults,
                                                                                   metrics_port, tmp_path):
    assert await create(conn) == Errors.NONE
    assert await produce_one(conn, b"a") == (Errors.NONE, 0)
    faults.set(f"EIO */{TOPIC}-0/*.log")
    for _attempt in range(5):  # each write tears half a batch, which is cut back
        assert (await produce_one(conn, b"x" * 5000))[0] == Errors.KAFKA_STORAGE_ERROR
    assert offline_gauge(metrics_port) == 1
    assert await read_all(conn) == [b"a"]  # reads go on, on the same connection
    faults.clear()
    assert await produce_one(conn, b"b") == (Errors.NONE, 1)
    assert offline_gauge(metrics_port) == 0
    assert_one_spell(faulty_broker)
    assert os.path.getsize(tmp_path / "data" / f"{TOPIC}-0" / f"{0:020d}.log") == sum(
        len(encode_batch([Record(v)])) for v in (b"a", b"b"))  # no torn bytes left between batches
    faulty_broker.kill()
    faulty_broker.start()
    again = await Connection.open("127.0.0.1", faulty_broker.port)
    try:
        assert await read_all(again) == [b"a", b"b"]
    finally:
        await again.close()
    assert not faulty_broker.log_contains("truncating")


async def test_eio_on_transaction_state_answers_not_coordinator(conn, faulty_broker, faults, metrics_port):
    first = await init(conn, "t1")
    assert first.error_code == Errors.NONE  # __transaction_state exists now
    faults.set("EIO */__transaction_state-*/*.log")
    assert (await init(conn, "t1")).error_code == Errors.NOT_COORDINATOR  # as Kafka's coordinator answers
    assert offline_gauge(metrics_port) == 1
    faults.clear()
    again = await init(conn, "t1")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (
        Errors.NONE, first.producer_id, first.producer_epoch + 1)
    assert_one_spell(faulty_broker)


async def test_eio_on_consumer_offsets_answers_not_coordinator(conn, faulty_broker, faults):
    assert await create(conn) == Errors.NONE
    assert await commit_offset(conn, "g", 1) == Errors.NONE
    faults.set("EIO */__consumer_offsets-*/*.log")
    assert await commit_offset(conn, "g", 2) == Errors.NOT_COORDINATOR
    faults.clear()
    assert await commit_offset(conn, "g", 3) == Errors.NONE
    assert_one_spell(faulty_broker)


@pytest.mark.parametrize("pattern", ["*.snapshot", "*.index", "*.timeindex"])
async def test_eio_on_a_roll_answers_storage_error_and_the_roll_is_retried(conn, faulty_broker, faults, pattern,
                                                                           tmp_path):
    """A roll writes the old segment's indexes and a producer snapshot: either failing fails
    the append that rolls, and the next append rolls again."""
    assert await create(conn, configs=[("segment.bytes", "16384")]) == Errors.NONE
    assert await produce_one(conn, b"x" * 10000) == (Errors.NONE, 0)
    faults.set(f"EIO */{TOPIC}-0/{pattern}")
    assert (await produce_one(conn, b"y" * 10000))[0] == Errors.KAFKA_STORAGE_ERROR
    faults.clear()
    assert await produce_one(conn, b"y" * 10000) == (Errors.NONE, 1)
    assert sorted(p.name for p in (tmp_path / "data" / f"{TOPIC}-0").glob("*.log")) == [
        f"{0:020d}.log", f"{1:020d}.log"]
    assert await read_all(conn) == [b"x" * 10000, b"y" * 10000]
    assert_one_spell(faulty_broker)


async def test_eio_on_a_topic_record_answers_storage_error(conn, faulty_broker, faults, tmp_path):
    faults.set("EIO */topics/*.json")
    assert await create(conn) == Errors.KAFKA_STORAGE_ERROR
    assert not list((tmp_path / "data").glob(f"{TOPIC}-*"))  # all or nothing
    faults.clear()
    assert await create(conn) == Errors.NONE
    assert await produce_one(conn, b"a") == (Errors.NONE, 0)
    assert_one_spell(faulty_broker)


async def test_markers_that_cannot_be_written_complete_once_they_can(conn, faulty_broker, faults):
    """EndTxn persists PrepareCommit and answers; the COMMIT marker on the failing partition is
    retried until written, the LSO held meanwhile; the id answers CONCURRENT_TRANSACTIONS."""
    assert await create(conn) == Errors.NONE
    answer = await init(conn, "tx")
    pid, epoch = answer.producer_id, answer.producer_epoch
    added = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_partitions_to_txn.REQUEST(
        v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[add_partitions_to_txn.Topic(name=TOPIC, partitions=[0])]))
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == Errors.NONE
    batch = encode_batch([Record(b"in-txn")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                         transactional=True)
    produced = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
        transactional_id="tx", acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=TOPIC, partition_data=[produce.PartitionData(index=0, records=batch)])]))
    assert produced.responses[0].partition_responses[0].error_code == Errors.NONE
    faults.set(f"EIO */{TOPIC}-0/*.log")
    ended = await conn.request(ApiKey.END_TXN, 3, end_txn.REQUEST(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=True))
    assert ended.error_code == Errors.NONE
    assert await stable_offset(conn) == 0
    assert await read_all(conn, isolation=1) == []
    assert (await init(conn, "tx")).error_code == Errors.CONCURRENT_TRANSACTIONS
    faults.clear()
    deadline = time.monotonic() + 10
    while await stable_offset(conn) != 2:
        assert time.monotonic() < deadline, "the marker was never retried"
        await asyncio.sleep(0.05)
    assert await read_all(conn, isolation=1) == [b"in-txn"]
    assert (await init(conn, "tx")).error_code == Errors.NONE
    assert_one_spell(faulty_broker)


async def test_a_read_only_data_directory_fails_every_write_and_serves_reads(conn, faulty_broker, faults,
                                                                            metrics_port):
    """EROFS on every path, as a read-only remount gives new writes (a real remount of a directory
    with files open for writing is refused with EBUSY, hence the injection)."""
    assert await create(conn) == Errors.NONE
    assert await produce_one(conn, b"a") == (Errors.NONE, 0)
    assert (await init(conn, "ro")).error_code == Errors.NONE
    faults.set("EROFS *")
    assert (await produce_one(conn, b"b"))[0] == Errors.KAFKA_STORAGE_ERROR
    assert (await init(conn, "ro")).error_code == Errors.NOT_COORDINATOR
    assert await create(conn, "another") == Errors.KAFKA_STORAGE_ERROR
    assert await read_all(conn) == [b"a"]
    assert offline_gauge(metrics_port) == 1
    faults.clear()
    assert await produce_one(conn, b"b") == (Errors.NONE, 1)
    assert (await init(conn, "ro")).error_code == Errors.NONE
    assert await create(conn, "another") == Errors.NONE
    assert offline_gauge(metrics_port) == 0
    assert_one_spell(faulty_broker)


async def test_a_transaction_timing_out_while_the_disk_fails_is_aborted_once_it_recovers(tmp_path, faults):
    """The timeout job's abort cannot be persisted while __transaction_state fails; it is tried
    again each round and goes through once writes succeed: no transaction hangs."""
    faults.clear()
    broker = BrokerProcess(tmp_path / "data", env={"WEIR_FAULTS_FILE": str(faults.path)}, overrides={
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}).start()
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        assert await create(conn) == Errors.NONE
        answer = await conn.request(ApiKey.INIT_PRODUCER_ID, 4, init_producer_id.REQUEST(
            transactional_id="slow", transaction_timeout_ms=1000))
        pid, epoch = answer.producer_id, answer.producer_epoch
        added = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_partitions_to_txn.REQUEST(
            v3_and_below_transactional_id="slow", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add_partitions_to_txn.Topic(name=TOPIC, partitions=[0])]))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == Errors.NONE
        batch = encode_batch([Record(b"never-committed")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                             transactional=True)
        produced = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
            transactional_id="slow", acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
                name=TOPIC, partition_data=[produce.PartitionData(index=0, records=batch)])]))
        assert produced.responses[0].partition_responses[0].error_code == Errors.NONE
        faults.set("EIO */__transaction_state-*/*.log")
        assert broker.wait_for_log("writes are failing", timeout=10)  # the abort's first attempt
        await asyncio.sleep(0.5)  # a few more rounds fail
        assert await stable_offset(conn) == 0
        faults.clear()
        deadline = time.monotonic() + 10
        while await stable_offset(conn) != 2:  # the ABORT marker closed it
            assert time.monotonic() < deadline, "the timed-out transaction was never aborted"
            await asyncio.sleep(0.05)
        fetched = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1, session_id=0,
            session_epoch=-1, topics=[fetch.FetchTopic(topic=TOPIC, partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""))
        aborted = fetched.responses[0].partitions[0].aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(pid, 0)]  # aborted, not committed
        assert_one_spell(broker)
    finally:
        await conn.close()
        broker.stop()
