"""The exactly-once sink through a driver kill -9 between a batch's decision and its commits."""

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer as CKProducer

from weir.client import Consumer, TopicPartition
from weir.pipeline.exactly_once import HOLD_AFTER_DECISION
from tests.broker_process import REPO
from tests.support.topics import create_topic
from tests.pipeline.test_source import ck_read

RECORDS = 200


def start_driver(bootstrap, source, target, checkpoint, **env):
    return subprocess.Popen([sys.executable, "-m", "tests.pipeline.eos_driver", bootstrap, source, target, checkpoint],
                            cwd=REPO, env={**os.environ, **env}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the whole group is gone already
    process.wait(30)


def wait_for_file(path, process, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) or not open(path).read():
        assert process.poll() is None, f"driver exited early:\n{process.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, "the driver never reached a decision"
        time.sleep(0.2)  # polling a file another process writes; no event crosses processes
    return int(open(path).read())


@pytest.mark.timeout(600)
def test_driver_killed_between_decision_and_commits_restarts_exactly_once(shared_broker, topic_name, tmp_path):
    bootstrap = shared_broker.bootstrap
    source, target = f"{topic_name}-in", f"{topic_name}-out"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, target, 3)
    producer = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(source, key=f"k{i}".encode(), value=f"record {i}".encode())
    producer.flush()
    checkpoint, marker = str(tmp_path / "checkpoint"), str(tmp_path / "decided")

    driver = start_driver(bootstrap, source, target, checkpoint, **{HOLD_AFTER_DECISION: marker})
    try:
        decided_batch = wait_for_file(marker, driver, timeout=150)
    finally:
        kill_group(driver)  # the JVM, the script and every Python worker at once
    assert decided_batch == 0
    # Decided, not committed: the batch's open transactions hold every last stable offset at 0.
    assert set(asyncio.run(end_offsets(bootstrap, target, "read_committed")).values()) == {0}
    assert sum(asyncio.run(end_offsets(bootstrap, target, "read_uncommitted")).values()) > 0

    restarted = start_driver(bootstrap, source, target, checkpoint)
    try:
        _out, errors = restarted.communicate(timeout=240)
    finally:
        if restarted.poll() is None:  # timed out: leave no JVM behind
            kill_group(restarted)
    assert restarted.returncode == 0, errors[-3000:]

    committed = ck_read(bootstrap, target, expected=RECORDS, timeout=20)
    assert sorted(value for _p, _o, _k, value, _h, _t in committed) == \
        sorted(f"record {i}".encode() for i in range(RECORDS))  # each input exactly once
    assert all(key == value.replace(b"record ", b"k") for _p, _o, key, value, _h, _t in committed)
    # No transaction left open (the aborted replay's or a lingering one): every last stable offset
    # has caught up with its high watermark.
    assert asyncio.run(end_offsets(bootstrap, target, "read_committed")) == \
        asyncio.run(end_offsets(bootstrap, target, "read_uncommitted"))


async def end_offsets(bootstrap, topic, isolation):
    async with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation) as consumer:
        return await consumer.end_offsets([TopicPartition(topic, p) for p in range(3)])
