"""A data directory on a small tmpfs that the test fills to ENOSPC, with clients nobody here wrote.

Kafka's answer (KAFKA_STORAGE_ERROR) arrives at once, the connection stays open, reads go on,
deleting a topic and retention free space on the full disk, a transaction committed while the
disk is full completes once space is freed, and writes resume without a restart. The tests run
as root (the project's machines do) to mount the tmpfs; each unmounts it on teardown.
"""

from __future__ import annotations

import errno
import os
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess, free_port
from tests.java.java_client import JavaProcess

TOPIC = "full"
SIZE = "24m"


@pytest.fixture
def tmpfs(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def metrics_port():
    return free_port()


def start(tmpfs, metrics_port, **overrides) -> BrokerProcess:
    return BrokerProcess(tmpfs / "data", overrides={"metrics.listener": f"127.0.0.1:{metrics_port}",
                                                    **overrides}).start()


@pytest.fixture
def disk_broker(tmpfs, metrics_port):
    process = start(tmpfs, metrics_port)
    yield process
    process.stop()


def fill(mount, name="filler"):
    """Write a file until the disk is full; its path (unlink it to free the space)."""
    path = mount / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (b"\0" * (1 << 20), b"\0" * 4096, b"\0"):
            while True:
                try:
                    if os.write(fd, chunk) < len(chunk):
                        break
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return path


def free_bytes(mount) -> int:
    stats = os.statvfs(mount)
    return stats.f_bavail * stats.f_frsize


def offline_gauge(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return next(float(line.split()[1]) for line in text.splitlines()
                if line.startswith("kafka_log_logmanager_offlinelogdirectorycount "))


def create_topics(broker, *topics: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics(list(topics)).values():
        future.result(10)


def deliver(producer: Producer, value: bytes, topic=TOPIC, timeout=15.0):
    """Produce one record and wait for its delivery report: (error or None, offset)."""
    outcome = []
    producer.produce(topic, value, on_delivery=lambda err, msg: outcome.append((err, msg.offset())))
    producer.flush(timeout)
    assert outcome, "no delivery report"
    return outcome[0]


def consume_all(broker, topic=TOPIC, isolation="read_uncommitted", expected=None, timeout=15.0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and (expected is None or len(values) < expected):
            message = consumer.poll(0.2)
            if message is None:
                if expected is None and values:
                    break
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
    finally:
        consumer.close()
    return values


def assert_one_spell(broker) -> None:
    assert sum("writes are failing" in line for line in broker.lines) == 1, "".join(broker.lines[-40:])
    assert broker.wait_for_log("writes succeed again")
    assert not broker.log_contains("Traceback"), "".join(broker.lines)[-5000:]
    assert not broker.log_contains("closing the connection")


def test_full_disk_answers_storage_error_at_once_and_writes_resume(disk_broker, tmpfs, metrics_port):
    create_topics(disk_broker, NewTopic(TOPIC, 1, 1))
    plain = Producer({"bootstrap.servers": disk_broker.bootstrap, "acks": "all", "enable.idempotence": False,
                      "retries": 0, "linger.ms": 0})
    for i in range(10):
        assert deliver(plain, b"ok-%d" % i) == (None, i)
    filler = fill(tmpfs)
    started = time.monotonic()
    error, _offset = deliver(plain, b"z" * 8192)
    first_error_s = time.monotonic() - started
    assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
    assert first_error_s < 2.0, first_error_s
    for _ in range(20):
        error, _offset = deliver(plain, b"z" * 8192)
        assert error.code() == KafkaError.KAFKA_STORAGE_ERROR
    assert offline_gauge(metrics_port) == 1
    assert consume_all(disk_broker, expected=10) == [b"ok-%d" % i for i in range(10)]  # reads go on

    # An idempotent producer started on the full disk waits: the broker's first id after a start
    # reserves a block on disk, and InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS (retriable)
    # until it can; then its record is delivered, once.
    idempotent = Producer({"bootstrap.servers": disk_broker.bootstrap, "enable.idempotence": True,
                           "linger.ms": 0, "retry.backoff.ms": 50})
    reports = []
    idempotent.produce(TOPIC, b"waited", on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    idempotent.poll(1.0)
    assert not reports
    os.unlink(filler)
    idempotent.flush(30)
    assert reports == [(None, 10)]  # no gap: every torn write was cut back
    assert deliver(plain, b"after") == (None, 11)
    assert offline_gauge(metrics_port) == 0
    assert_one_spell(disk_broker)
    print(f"\nfull disk -> first KAFKA_STORAGE_ERROR (librdkafka delivery report): {first_error_s * 1000:.1f} ms")

    disk_broker.kill()  # the tail on disk is whole batches: recovery cuts nothing
    disk_broker.start()
    assert consume_all(disk_broker, expected=12)[-2:] == [b"waited", b"after"]
    assert not disk_broker.log_contains("truncating")


def test_full_disk_java_producer_gets_kafka_storage_exception(disk_broker, tmpfs):
    create_topics(disk_broker, NewTopic(TOPIC, 1, 1))
    java = JavaProcess("ProduceOnCommand", disk_broker.bootstrap, TOPIC, "acks", "all",
                       "enable.idempotence", "false", "retries", "0")
    try:
        java.wait_for(lambda e: e["event"] == "ready")

        def send(size: int) -> dict:
            seen = len(java.events)
            java.process.stdin.write(f"send {size}\n")
            java.process.stdin.flush()
            return java.wait_for(lambda e: e["event"] in ("sent", "failed") and java.events.index(e) >= seen)

        assert send(100)["offset"] == 0
        filler = fill(tmpfs)
        failed = send(8192)
        assert (failed["event"], failed["error"]) == ("failed", "KafkaStorageException"), failed
        assert failed["ms"] < 2000
        print(f"\nfull disk -> KafkaStorageException (Java producer, retries=0): {failed['ms']} ms")
        os.unlink(filler)
        resumed = send(100)  # the same producer and connection, no restart
        assert (resumed["event"], resumed["offset"]) == ("sent", 1), resumed
    finally:
        java.stop()
    assert_one_spell(disk_broker)


def test_transaction_on_a_full_disk_commits_once_space_is_freed(disk_broker, tmpfs):
    """A record of an open transaction refused for the full disk is retried by librdkafka (the
    error is retriable) and the commit goes through once space is freed. (Small writes such as
    markers may still fit in a file's last page on a full tmpfs; test_disk_faults.py fails
    those deterministically.)"""
    create_topics(disk_broker, NewTopic(TOPIC, 1, 1))
    producer = Producer({"bootstrap.servers": disk_broker.bootstrap, "transactional.id": "full-disk-txn",
                         "retry.backoff.ms": 50})
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(TOPIC, b"txn-%d" % i)
    producer.flush(10)
    filler = fill(tmpfs)
    producer.produce(TOPIC, b"big" * 30000)
    producer.poll(1.0)
    assert disk_broker.log_contains("writes are failing")
    os.unlink(filler)
    producer.commit_transaction(30)
    assert consume_all(disk_broker, isolation="read_committed", expected=4) == [
        b"txn-0", b"txn-1", b"txn-2", b"big" * 30000]
    assert_one_spell(disk_broker)


def test_deleting_a_topic_and_retention_work_on_a_full_disk(tmpfs, metrics_port):
    broker = start(tmpfs, metrics_port, **{"log.retention.check.interval.ms": "200"})
    try:
        create_topics(broker, NewTopic("doomed", 1, 1),
                      NewTopic("aging", 1, 1, config={"retention.ms": "3000", "segment.bytes": "65536"}))
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for _ in range(64):
            producer.produce("doomed", b"d" * 16384)
            producer.produce("aging", b"a" * 16384)
        assert producer.flush(15) == 0
        filler = fill(tmpfs)
        full = free_bytes(tmpfs)
        assert broker.wait_for_log("aging-0: retention deleted", timeout=15)
        assert free_bytes(tmpfs) > full + 512 * 1024  # the expired segments are gone from the full disk
        second = fill(tmpfs, "filler-2")
        full = free_bytes(tmpfs)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics(["doomed"])["doomed"].result(10)
        assert free_bytes(tmpfs) > full + 900 * 1024
        assert not list((tmpfs / "data").glob("doomed-*"))
        create_topics(broker, NewTopic(TOPIC, 1, 1))  # writes work again in the space freed
        assert deliver(producer, b"fits") == (None, 0)
        for path in (filler, second):
            os.unlink(path)
        assert not broker.log_contains("Traceback"), "".join(broker.lines)[-5000:]
    finally:
        broker.stop()
