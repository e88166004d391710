"""File descriptors and all-or-nothing topic creation, over the real broker process.

The finding: one CreateTopics with 100,000 partitions exhausted the broker's
descriptors, left thousands of directories for a topic the client was told had
failed, and after a restart the broker loaded them, hit the limit again and
silently dropped every new connection.
"""

import json
import shutil
import socket
import time

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics, fetch, produce
from weir.protocol.records import Record, decode_batches, encode_batch
from tests.broker_process import BrokerProcess
from tests.integration.test_topics import create

# A clean shutdown writes a producer-state snapshot (with fsync) per partition: thousands take a while.
SHUTDOWN_MANY = 180


def topic_dirs(data_dir, topic):
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(topic + "-"))


async def create_raw(conn, name, partitions):
    answer = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                                     configs=[])]))
    return answer.topics[0].error_code


async def produce_raw(conn, topic, partitions, value):
    """One Produce request writing ``value`` to each of ``partitions``; error code per partition."""
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(
        transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[produce.TopicData(
            name=topic, partition_data=[produce.PartitionData(index=i, records=encode_batch([Record(value)]))
                                        for i in partitions])]))
    return {p.index: p.error_code for p in answer.responses[0].partition_responses}


async def fetch_raw(conn, topic, partitions):
    """(error code, record values) per partition, from offset 0."""
    answer = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition(
            partition=i, fetch_offset=0, partition_max_bytes=1 << 16) for i in partitions])],
        forgotten_topics_data=[], rack_id=""))
    return {p.partition_index: (p.error_code, [r.value for _h, records in decode_batches(p.records or b"")
                                               for r in records])
            for p in answer.responses[0].partitions}


def test_create_topics_with_100000_partitions_is_refused_and_leaves_nothing(shared_broker, topic_name):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    outcome = create(admin, NewTopic(topic_name, 100_000, 1), NewTopic(topic_name + "-small", 1, 1))
    assert outcome == {topic_name: KafkaError.POLICY_VIOLATION, topic_name + "-small": KafkaError.POLICY_VIOLATION}, \
        "Kafka refuses the whole request past 10,000 partitions"
    assert topic_dirs(shared_broker.data_dir, topic_name) == []
    assert topic_name not in admin.list_topics(timeout=10).topics
    assert create(admin, NewTopic(topic_name, 2, 1)) == {topic_name: None}, "the broker is unharmed"


def test_max_broker_partitions_is_refused_with_policy_violation(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data", overrides={"max.broker.partitions": "10"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert create(admin, NewTopic(topic_name, 6, 1)) == {topic_name: None}
        assert create(admin, NewTopic(topic_name + "-b", 5, 1)) == {topic_name + "-b": KafkaError.POLICY_VIOLATION}
        assert topic_dirs(broker.data_dir, topic_name + "-b") == []
    finally:
        broker.stop()


def test_a_creation_failing_midway_leaves_nothing_and_a_restart_loads_cleanly(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        blocker = broker.data_dir / f"{topic_name}-300"
        blocker.write_text("partition 300 cannot be made here")
        assert create(admin, NewTopic(topic_name, 500, 1)) == {topic_name: KafkaError.KAFKA_STORAGE_ERROR}
        assert broker.wait_for_log(f"cannot create partition {topic_name}-300")
        assert topic_dirs(broker.data_dir, topic_name) == [f"{topic_name}-300"]
        broker.stop()
        broker.start()
        assert not broker.log_contains("removing partition directory"), "nothing was left to clean"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert topic_name not in admin.list_topics(timeout=10).topics
        blocker.unlink()
        assert create(admin, NewTopic(topic_name, 500, 1)) == {topic_name: None}
        assert len(admin.list_topics(timeout=10).topics[topic_name].partitions) == 500
    finally:
        broker.stop()


def test_a_crash_midway_through_a_creation_leaves_nothing_a_restart_loads(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        # the largest topic one request may create: a topic record and 9,999 partition records
        admin.create_topics([NewTopic(topic_name, 9_999, 1)], operation_timeout=60)
        deadline = time.monotonic() + 60
        while len(topic_dirs(broker.data_dir, topic_name)) < 100:
            assert time.monotonic() < deadline, "the creation never started"
            time.sleep(0.01)
        broker.kill()
        committed = (broker.data_dir / "topics" / f"{topic_name}.json").exists()
        broker.start()
        partitions = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics.get(
            topic_name)
        if committed:  # the kill came after the topic's record: all of it
            assert len(partitions.partitions) == 9_999
        else:
            assert partitions is None or partitions.error is not None
            assert topic_dirs(broker.data_dir, topic_name) == []
            assert broker.log_contains(f"no topic {topic_name} was committed")
    finally:
        broker.stop(timeout=SHUTDOWN_MANY)


async def test_out_of_descriptors_is_answered_and_logged_and_recovers(tmp_path):
    broker = BrokerProcess(tmp_path / "data", open_files_limit=200,
                           overrides={"weir.max.open.segment.files": "1"}).start()
    flood = []
    try:
        assert broker.wait_for_log("open files limit: soft 200, hard 200")
        conn = await Connection.open("127.0.0.1", broker.port)
        assert await create_raw(conn, "t", 2) == Errors.NONE
        assert await produce_raw(conn, "t", [0], b"first") == {0: Errors.NONE}
        assert await produce_raw(conn, "t", [1], b"other") == {1: Errors.NONE}  # closes partition 0's file
        deadline = time.monotonic() + 30
        while not broker.log_contains("cannot accept connections"):
            assert time.monotonic() < deadline, "the broker never ran out of descriptors"
            for _ in range(10):
                flood.append(socket.create_connection(("127.0.0.1", broker.port)))
            time.sleep(0.05)  # let the broker accept them; the poll above has a deadline
        assert await produce_raw(conn, "t", [0], b"lost") == {0: Errors.KAFKA_STORAGE_ERROR}
        assert (await fetch_raw(conn, "t", [0]))[0][0] == Errors.KAFKA_STORAGE_ERROR
        assert await create_raw(conn, "late", 3) == Errors.KAFKA_STORAGE_ERROR
        assert topic_dirs(broker.data_dir, "late") == []
        assert broker.log_contains("out of file descriptors")
        for sock in flood:
            sock.close()
        flood.clear()
        deadline = time.monotonic() + 30
        while (await produce_raw(conn, "t", [0], b"second"))[0] != Errors.NONE:
            assert time.monotonic() < deadline, "descriptors were never freed"
        assert (await fetch_raw(conn, "t", [0]))[0] == (Errors.NONE, [b"first", b"second"])
        await conn.close()
        late = await Connection.open("127.0.0.1", broker.port)  # new connections are served again
        assert await create_raw(late, "late", 3) == Errors.NONE
        await late.close()
    finally:
        for sock in flood:
            sock.close()
        broker.stop()


async def test_thousands_of_partitions_stay_within_the_open_file_budget(tmp_path):
    budget = 40
    broker = BrokerProcess(tmp_path / "data", overrides={"weir.max.open.segment.files": str(budget),
                                                         "max.broker.partitions": "5000"}).start()
    try:
        conn = await Connection.open("127.0.0.1", broker.port)
        for topic in ("many-a", "many-b", "many-c"):
            assert await create_raw(conn, topic, 1000) == Errors.NONE
        baseline = broker.open_files()
        assert broker.open_files(under=broker.data_dir) == 0, "new partitions hold no descriptor"
        written = range(0, 1000, 3)
        for topic in ("many-a", "many-b", "many-c"):
            for start in range(0, len(written), 100):
                chunk = written[start:start + 100]
                assert set((await produce_raw(conn, topic, chunk, topic.encode())).values()) == {Errors.NONE}
                assert broker.open_files(under=broker.data_dir) <= budget
                assert broker.open_files() <= baseline + budget
        for topic in ("many-a", "many-b", "many-c"):
            for start in range(0, len(written), 100):
                chunk = written[start:start + 100]
                answers = await fetch_raw(conn, topic, chunk)
                assert all(answers[i] == (Errors.NONE, [topic.encode()]) for i in chunk)
                assert broker.open_files(under=broker.data_dir) <= budget
                assert broker.open_files() <= baseline + budget
        await conn.close()
    finally:
        broker.stop(timeout=SHUTDOWN_MANY)


def test_a_half_created_topic_from_the_old_layout_does_not_stop_new_connections(tmp_path, topic_name):
    """What the old broker left: thousands of partition directories with their segment files and no
    record; restarted with a low open files limit it must still load and serve."""
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir).start()
    broker.stop()
    shutil.rmtree(data_dir / "topics", ignore_errors=True)  # a data directory from before topic records
    meta = json.dumps({"version": 0, "topic_id": "ab" * 16, "configs": {}})
    for index in range(3000):
        directory = data_dir / f"half-{index}"
        directory.mkdir()
        (directory / "partition.metadata").write_text(meta)
        for suffix in (".log", ".index", ".timeindex"):
            (directory / f"{0:020d}{suffix}").touch()
    broker = BrokerProcess(data_dir, open_files_limit=256, overrides={"max.broker.partitions": "5000"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert len(admin.list_topics(timeout=10).topics["half"].partitions) == 3000
        assert create(admin, NewTopic(topic_name, 1, 1)) == {topic_name: None}
        assert broker.open_files() < 256
    finally:
        broker.stop(timeout=SHUTDOWN_MANY)
